//! Omid's closed sets of names: planted bugs, named crash points and the
//! conflict-detection granularity. Each reads and writes by its name; an
//! unknown name is an error listing the known ones.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Declare a closed enum of named identities with `ALL`, `name()`,
/// `describe()` and `from_name()`, read and written by name.
macro_rules! named {
    (
        $(#[$meta:meta])*
        pub enum $ty:ident, $what:expr, {
            $( $(#[$vmeta:meta])* $variant:ident => ($name:expr, $desc:expr), )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $ty {
            $( $(#[$vmeta])* $variant, )+
        }

        impl $ty {
            /// Every value, in declaration order.
            pub const ALL: &'static [$ty] = &[$( $ty::$variant, )+];

            /// Its name (scenario files, command lines, counters).
            pub fn name(self) -> &'static str {
                match self { $( $ty::$variant => $name, )+ }
            }

            /// What it is, in a sentence.
            pub fn describe(self) -> &'static str {
                match self { $( $ty::$variant => $desc, )+ }
            }

            /// The value named `name`, if any.
            pub fn from_name(name: &str) -> Option<$ty> {
                $ty::ALL.iter().copied().find(|v| v.name() == name)
            }
        }

        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }

        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let name = String::deserialize(d)?;
                $ty::from_name(&name).ok_or_else(|| {
                    let known: Vec<&str> = $ty::ALL.iter().map(|v| v.name()).collect();
                    serde::de::Error::custom(format!(
                        "unknown {} {name:?} (known: {})",
                        $what,
                        known.join(", ")
                    ))
                })
            }
        }
    };
}

named! {
    /// Omid's planted bugs: each removes exactly one named mechanism.
    pub enum OmidAblation, "planted bug", {
        /// The TSO commits a transaction that started below its low
        /// watermark (whose conflicts it may have evicted).
        NoLowWatermarkAbort => ("no-low-watermark-abort", "the TSO commits a transaction that started below its low watermark, whose conflicts the bounded map may have evicted"),
        /// The TSO tells the client "committed" before the commit table
        /// holds the decision, and persists it afterwards.
        ReplyBeforeCommitTable => ("reply-before-commit-table", "the TSO answers a commit before the decision is in the commit table, and writes it afterwards"),
        /// The client writes its shadow cells before the decision is in the
        /// commit table (it writes the entry itself afterwards).
        ShadowCellsBeforeCommitTable => ("shadow-cells-before-commit-table", "the client writes its shadow cells before the commit decision is in the commit table"),
        /// A reader treats a version without a shadow cell as aborted,
        /// without consulting the commit table.
        ReaderSkipsCommitTable => ("reader-skips-commit-table", "a reader treats a version without a shadow cell as aborted, without consulting the commit table"),
        /// A reader skips a version of an undecided transaction without
        /// invalidating it, so the transaction may still commit below the
        /// reader's snapshot.
        NoInvalidation => ("no-invalidation", "a reader skips a version of an undecided transaction without invalidating it in the commit table"),
        /// A TSO that lost its lease goes on serving: it neither checks its
        /// lease nor has its decisions fenced by epoch in the commit table,
        /// so two TSOs commit after a failover.
        NoTsoFencing => ("no-tso-fencing", "a TSO that lost its lease goes on handing out timestamps and committing, unfenced, so two TSOs commit after a failover"),
    }
}

named! {
    /// The nodes that reach named crash points.
    pub enum OmidPointOwner, "node kind", {
        /// The transaction status oracle.
        Tso => ("tso", "the transaction status oracle"),
        /// A client.
        Client => ("client", "a client"),
        /// A tablet server.
        Tablet => ("tablet", "a tablet server"),
    }
}

named! {
    /// Omid's named crash points, in the order a commit reaches them.
    pub enum OmidPoint, "crash point", {
        /// A client wrote its data cells and has not asked for the commit.
        ClientAfterDataWrites => ("client_after_data_writes", "a client wrote its data cells and has not asked the TSO to commit"),
        /// The TSO decided a commit and has not written the commit table.
        TsoAfterDecision => ("tso_after_decision", "the TSO decided a commit and has not written it to the commit table"),
        /// A tablet server applied a write and has not answered it.
        TabletAfterApply => ("tablet_after_apply", "a tablet server applied a write and has not answered it"),
        /// The TSO wrote the commit table and has not answered the client.
        TsoAfterCommitTable => ("tso_after_commit_table", "the TSO wrote the decision to the commit table and has not answered the client"),
        /// A client learnt its commit and has not written its shadow cells.
        ClientBeforeShadowCells => ("client_before_shadow_cells", "a client learnt its commit and has not written its shadow cells"),
        /// A client wrote its shadow cells and has not deleted its
        /// commit-table entry.
        ClientAfterShadowCells => ("client_after_shadow_cells", "a client wrote its shadow cells and has not deleted its commit-table entry"),
    }
}

impl OmidPoint {
    /// The kind of node that reaches it.
    pub fn owner(self) -> OmidPointOwner {
        match self {
            OmidPoint::TsoAfterDecision | OmidPoint::TsoAfterCommitTable => OmidPointOwner::Tso,
            OmidPoint::TabletAfterApply => OmidPointOwner::Tablet,
            OmidPoint::ClientAfterDataWrites
            | OmidPoint::ClientBeforeShadowCells
            | OmidPoint::ClientAfterShadowCells => OmidPointOwner::Client,
        }
    }
}

named! {
    /// What the TSO's conflict detection compares: cells, or whole rows
    /// (Omid's row-level conflict detection, added for Apache Phoenix).
    pub enum Granularity, "conflict granularity", {
        /// Two writes conflict when they write the same cell.
        Cell => ("cell", "two transactions conflict when they write the same cell"),
        /// Two writes conflict when they write the same row.
        Row => ("row", "two transactions conflict when they write the same row"),
    }
}

named! {
    /// When a client reports its commit to the application (Apache Omid's
    /// client setting `postCommitMode`): after its post-commit (shadow
    /// cells written, commit-table entry deleted), or at the TSO's answer,
    /// the post-commit following.
    pub enum PostCommit, "post-commit mode", {
        /// The commit is reported once the shadow cells are written and
        /// the commit-table entry is deleted (Omid's default).
        Sync => ("sync", "the commit is reported after the shadow cells are written and the commit-table entry deleted"),
        /// The commit is reported at the TSO's answer; the shadow cells
        /// and the deletion follow.
        Async => ("async", "the commit is reported at the TSO's answer, the shadow cells and the entry's deletion follow"),
    }
}

/// The planted bugs switched on for a run (none: the faithful protocol).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OmidAblations(Vec<OmidAblation>);

impl OmidAblations {
    /// The set of `list`.
    pub fn of(list: &[OmidAblation]) -> Self {
        OmidAblations(list.to_vec())
    }

    /// Whether `a` is on.
    pub fn has(&self, a: OmidAblation) -> bool {
        self.0.contains(&a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back_and_an_unknown_name_lists_the_known() {
        for a in OmidAblation::ALL {
            let json = serde_json::to_string(a).unwrap();
            assert_eq!(serde_json::from_str::<OmidAblation>(&json).unwrap(), *a);
        }
        let e = serde_json::from_str::<OmidPoint>("\"nowhere\"").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("unknown crash point \"nowhere\" (known: client_after_data_writes,"),
            "{e}"
        );
        let g: Granularity = serde_json::from_str("\"row\"").unwrap();
        assert_eq!(g, Granularity::Row);
        let m: PostCommit = serde_json::from_str("\"async\"").unwrap();
        assert_eq!(m, PostCommit::Async);
        let e = serde_json::from_str::<PostCommit>("\"later\"").unwrap_err();
        assert!(e.to_string().starts_with("unknown post-commit mode"), "{e}");
    }

    #[test]
    fn every_point_has_an_owner_and_the_set_answers_membership() {
        let tso = OmidPoint::ALL
            .iter()
            .filter(|p| p.owner() == OmidPointOwner::Tso)
            .count();
        assert_eq!(tso, 2);
        let set = OmidAblations::of(&[OmidAblation::NoInvalidation]);
        assert!(set.has(OmidAblation::NoInvalidation));
        assert!(!set.has(OmidAblation::ReaderSkipsCommitTable));
        assert!(!OmidAblations::default().has(OmidAblation::NoInvalidation));
    }
}
