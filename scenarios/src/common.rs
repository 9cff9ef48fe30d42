//! What the systems' workloads truly share.

/// FNV-1a, written out so a hash never depends on the platform (both
/// systems' document pipelines hash contents with it, so their jobs pick
/// the same documents as duplicates).
pub(crate) fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}
