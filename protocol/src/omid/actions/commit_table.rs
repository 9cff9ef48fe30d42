//! The commit table's conditional write ("Taking Omid to the Clouds",
//! section 4: a commit and an invalidation race through one atomic
//! check-and-put on the transaction's entry). Whichever reaches an empty
//! entry first wins; the loser learns what is there.

use crate::omid::types::CtEntry;

/// Put `write` in the entry `slot` if it is empty; answer the entry in
/// effect afterwards (the one written, or the one that was there).
pub fn put_if_absent(slot: &mut Option<CtEntry>, write: CtEntry) -> CtEntry {
    *slot.get_or_insert(write)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::omid::actions::test_util::*;

    #[test]
    fn the_first_of_a_commit_and_an_invalidation_wins() {
        let mut slot = None;
        let commit = CtEntry::Committed { commit_ts: 7 };
        assert_eq!(put_if_absent(&mut slot, commit), commit);
        assert_eq!(put_if_absent(&mut slot, CtEntry::Invalid), commit);
        let mut slot = None;
        assert_eq!(put_if_absent(&mut slot, CtEntry::Invalid), CtEntry::Invalid);
        assert_eq!(put_if_absent(&mut slot, commit), CtEntry::Invalid);
    }

    #[test]
    fn a_reader_that_invalidates_first_makes_the_commit_fail() {
        let mut m = Model::new(100);
        let w = m.must_begin();
        m.must_write(w, "x", "v1");
        let r = m.must_begin();
        m.must_read(r, "x", None);
        m.must_fail_commit_table(w, &["x"]);
    }
}
