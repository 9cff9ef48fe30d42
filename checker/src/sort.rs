//! Sorting the rules' large lists without comparisons: a stable radix sort
//! on a 64-bit key, and grouping by a dense id (a cell) with one count and
//! one placement pass. On a history of millions of transactions a
//! comparison sort of the whole list was most of the rules' instructions.

/// Below this many items a comparison sort is cheaper than the counts.
const SMALL: usize = 512;

/// Sorts `v` by `key`, stably (items with equal keys keep their order): one
/// pass per byte of the key in which the items differ (timestamps and ids of
/// one history share their high bytes, which are skipped). Uses a second
/// buffer as large as `v` while it runs.
pub(crate) fn radix_sort_by_key<T: Copy>(v: &mut Vec<T>, key: impl Fn(&T) -> u64) {
    let n = v.len();
    if n < SMALL {
        v.sort_by_key(|x| key(x));
        return;
    }
    let mut counts = vec![[0usize; 256]; 8];
    for x in v.iter() {
        let k = key(x);
        for (b, c) in counts.iter_mut().enumerate() {
            c[((k >> (8 * b)) & 0xff) as usize] += 1;
        }
    }
    let mut other: Vec<T> = Vec::new();
    for (b, c) in counts.iter().enumerate() {
        // A byte every item shares orders nothing.
        if c.contains(&n) {
            continue;
        }
        if other.is_empty() {
            other.extend_from_slice(v);
        }
        let mut at = [0usize; 256];
        let mut sum = 0;
        for (a, &k) in at.iter_mut().zip(c.iter()) {
            *a = sum;
            sum += k;
        }
        for x in v.iter() {
            let d = ((key(x) >> (8 * b)) & 0xff) as usize;
            other[at[d]] = *x;
            at[d] += 1;
        }
        std::mem::swap(v, &mut other);
    }
}

/// The items `each` emits, grouped by their bucket (`0..buckets`), in the
/// order emitted within one bucket: `(off, items)` where bucket `b`'s items
/// are `items[off[b]..off[b + 1]]`. `each` is called twice (to count, then
/// to place) and must emit the same items both times; no list of
/// (bucket, item) pairs is ever made.
pub(crate) fn group_by<T: Copy>(
    buckets: usize,
    fill: T,
    mut each: impl FnMut(&mut dyn FnMut(u32, T)),
) -> (Vec<usize>, Vec<T>) {
    let mut off = vec![0usize; buckets + 1];
    each(&mut |b, _| off[b as usize + 1] += 1);
    for i in 0..buckets {
        off[i + 1] += off[i];
    }
    let mut items = vec![fill; off[buckets]];
    let mut at = off[..buckets].to_vec();
    each(&mut |b, x| {
        items[at[b as usize]] = x;
        at[b as usize] += 1;
    });
    (off, items)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// splitmix64, for test data.
    fn mix(i: u64) -> u64 {
        let mut z = i.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Same order as a stable comparison sort, for keys that differ in low
    /// bytes only, in high bytes only, everywhere, or not at all; short
    /// lists too.
    #[test]
    fn radix_sort_is_a_stable_sort() {
        let shapes: [fn(u64) -> u64; 4] = [|i| mix(i) % 1000, |i| (mix(i) % 7) << 56, mix, |_| 42];
        for n in [0usize, 1, 5, SMALL - 1, SMALL, 5000] {
            for shape in shapes {
                let mut v: Vec<(u64, u32)> = (0..n as u64).map(|i| (shape(i), i as u32)).collect();
                let mut want = v.clone();
                want.sort_by_key(|x| x.0);
                radix_sort_by_key(&mut v, |x| x.0);
                assert_eq!(v, want, "n {n}");
            }
        }
    }

    /// Each bucket holds its items in the order emitted; empty buckets
    /// have empty ranges.
    #[test]
    fn grouping_keeps_the_emitted_order_within_a_bucket() {
        let items: Vec<(u32, u64)> = (0..1000u64).map(|i| ((mix(i) % 37) as u32, i)).collect();
        let (off, got) = group_by(40, 0u64, |emit| {
            items.iter().for_each(|&(b, x)| emit(b, x));
        });
        assert_eq!(off.len(), 41);
        assert_eq!(off[40], 1000);
        for b in 0..40u32 {
            let want: Vec<u64> = items.iter().filter(|x| x.0 == b).map(|x| x.1).collect();
            assert_eq!(&got[off[b as usize]..off[b as usize + 1]], &want[..]);
        }
        assert_eq!(off[38], off[40]);
    }
}
