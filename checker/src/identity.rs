//! What every set of the checker's identities shares, whatever the history
//! format: a closed list of names as reports spell them, looked up by name,
//! and (for rules) the classes of finding each rule reports. The transaction
//! formats' [`crate::Rule`] and [`crate::FindingClass`] and the stream
//! format's [`crate::stream::StreamRule`] and
//! [`crate::stream::StreamFindingClass`] each implement it once.

/// A closed set of identities, each with the name reports spell it with.
pub trait Named: Copy + Eq + 'static {
    /// Every identity, in report order.
    const ALL: &'static [Self];

    /// The identity's name, as reports spell it.
    fn name(self) -> &'static str;

    /// The identity with this name, if there is one.
    fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|x| x.name() == name)
    }
}

/// A class of finding: one rule reports it.
pub trait ClassOf: Named {
    /// The rules of its format.
    type Rule: Named;

    /// The rule that reports this class.
    fn rule_of(self) -> Self::Rule;
}

/// A rule: it reports the classes of finding of its format whose
/// [`ClassOf::rule_of`] it is.
pub trait RuleOf: Named {
    /// The classes of finding of its format.
    type Class: ClassOf<Rule = Self>;

    /// The classes of finding this rule reports, in declaration order.
    fn classes(self) -> impl Iterator<Item = Self::Class> {
        let all = <Self::Class as Named>::ALL.iter().copied();
        all.filter(move |c| c.rule_of() == self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::{StreamFindingClass, StreamRule};
    use crate::{FindingClass, Rule};

    /// Names are unique and look up their identity; nothing else does.
    fn names_round_trip<T: Named + std::fmt::Debug>() {
        for &x in T::ALL {
            assert_eq!(T::from_name(x.name()), Some(x), "{x:?}");
        }
        assert_eq!(T::from_name("no_such_name"), None);
    }

    /// Every rule reports some class, and the classes are listed grouped by
    /// rule, in the rules' report order.
    fn classes_grouped_by_rule<R: RuleOf + std::fmt::Debug>() {
        let index = |r: R| R::ALL.iter().position(|x| *x == r);
        let order: Vec<_> = R::Class::ALL.iter().map(|c| index(c.rule_of())).collect();
        assert!(order.windows(2).all(|w| w[0] <= w[1]), "{order:?}");
        for &r in R::ALL {
            assert!(r.classes().count() > 0, "{r:?}");
        }
    }

    #[test]
    fn every_set_of_identities_holds_together() {
        names_round_trip::<Rule>();
        names_round_trip::<FindingClass>();
        names_round_trip::<StreamRule>();
        names_round_trip::<StreamFindingClass>();
        classes_grouped_by_rule::<Rule>();
        classes_grouped_by_rule::<StreamRule>();
    }

    /// The checks above can fail: a set whose two members share a name, and
    /// one whose classes are out of rule order, are caught.
    #[test]
    fn a_broken_set_is_caught() {
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        enum Twice {
            A,
            B,
        }
        impl Named for Twice {
            const ALL: &'static [Twice] = &[Twice::A, Twice::B];
            fn name(self) -> &'static str {
                "same"
            }
        }
        assert!(std::panic::catch_unwind(names_round_trip::<Twice>).is_err());
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        enum Backwards {
            First,
            Second,
        }
        impl Named for Backwards {
            const ALL: &'static [Backwards] = &[Backwards::First, Backwards::Second];
            fn name(self) -> &'static str {
                match self {
                    Backwards::First => "first",
                    Backwards::Second => "second",
                }
            }
        }
        impl ClassOf for Backwards {
            type Rule = Backwards;
            fn rule_of(self) -> Backwards {
                match self {
                    Backwards::First => Backwards::Second,
                    Backwards::Second => Backwards::First,
                }
            }
        }
        impl RuleOf for Backwards {
            type Class = Backwards;
        }
        assert!(std::panic::catch_unwind(classes_grouped_by_rule::<Backwards>).is_err());
    }
}
