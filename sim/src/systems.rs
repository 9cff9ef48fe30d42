//! The systems percsim can put in its world, by name (a scenario file's
//! `"system"`). The world itself knows none of them.

crate::identities! {
    /// The systems percsim can put in its world.
    pub enum SystemKind {
        /// Google's Percolator: timestamp oracle, tablet servers, clients
        /// with two-phase commit and lazy lock cleanup, observers.
        Percolator => ("percolator", "Google's Percolator (OSDI 2010): oracle, tablet servers, two-phase commit with lazy cleanup, observers"),
        /// Apache Pulsar's transactions (2.8): a transaction coordinator,
        /// brokers with transaction buffers and pending acks, clients.
        Pulsar => ("pulsar", "Apache Pulsar's transactions (2.8): a coordinator with a durable log, brokers with transaction buffers and pending acks, exactly-once processors"),
    }
}

// The enum is declared by a macro, which cannot take `#[default]`.
#[allow(clippy::derivable_impls)]
impl Default for SystemKind {
    fn default() -> Self {
        SystemKind::Percolator
    }
}

impl serde::Serialize for SystemKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for SystemKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        SystemKind::from_name(&name).ok_or_else(|| {
            let known: Vec<&str> = SystemKind::ALL.iter().map(|s| s.name()).collect();
            serde::de::Error::custom(format!(
                "unknown system {name:?} (known: {})",
                known.join(", ")
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_system_is_refused_by_name() {
        let e = serde_json::from_str::<SystemKind>("\"pulsr\"").unwrap_err();
        assert!(e.to_string().contains("unknown system \"pulsr\""), "{e}");
        assert_eq!(
            SystemKind::from_name("percolator"),
            Some(SystemKind::Percolator)
        );
        let s: SystemKind = serde_json::from_str("\"percolator\"").unwrap();
        assert_eq!(s, SystemKind::Percolator);
    }
}
