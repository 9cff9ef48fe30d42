//! How a time reads in text a person reads: in milliseconds, with the unit
//! written (`1234.567 ms`). Histories keep nanoseconds in fields whose
//! names end in `_ns`; every explanation, report line and message shows
//! them through [`Ms`], so no text mixes the two units.

use std::fmt;

/// A time in ns, displayed in ms: three decimals (`1234.500 ms`), or six
/// when the time is not a whole number of microseconds (`0.000355 ms`),
/// so two different times never read the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Ms(pub u64);

impl fmt::Display for Ms {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (whole, part_ns) = (self.0 / 1_000_000, self.0 % 1_000_000);
        if part_ns % 1_000 == 0 {
            write!(f, "{whole}.{:03} ms", part_ns / 1_000)
        } else {
            write!(f, "{whole}.{part_ns:06} ms")
        }
    }
}

/// Where `text` shows a bare number of nanoseconds (a digit, a space and
/// `ns` ending the word), as the byte offsets of those numbers: a person
/// reads times in ms ([`Ms`]); `_ns` field names are not flagged.
pub fn bare_ns(text: &str) -> Vec<usize> {
    let b = text.as_bytes();
    let mut found = Vec::new();
    for (i, w) in b.windows(3).enumerate() {
        let ends = b
            .get(i + 3)
            .is_none_or(|c| !c.is_ascii_alphanumeric() && *c != b'_');
        if w == b" ns" && i > 0 && b[i - 1].is_ascii_digit() && ends {
            let start = b[..i]
                .iter()
                .rposition(|c| !c.is_ascii_digit() && *c != b'.');
            found.push(start.map_or(0, |s| s + 1));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::{Ms, bare_ns};

    #[test]
    fn times_read_in_ms_with_their_unit() {
        assert_eq!(Ms(1_234_567_000).to_string(), "1234.567 ms");
        assert_eq!(Ms(0).to_string(), "0.000 ms");
        assert_eq!(Ms(2_000_000).to_string(), "2.000 ms");
        assert_eq!(Ms(355).to_string(), "0.000355 ms");
        assert_eq!(Ms(1_000_000_001).to_string(), "1000.000001 ms");
        assert_ne!(Ms(1_000_500).to_string(), Ms(1_000_501).to_string());
    }

    #[test]
    fn a_bare_number_of_ns_is_found() {
        assert_eq!(bare_ns("invoked at 355 ns, told at 1.5 ns"), [11, 27]);
        assert_eq!(bare_ns("at 7 ns"), [3]);
        assert!(bare_ns("invoked at 0.000355 ms; t_ns 5; invoke_ns: 3").is_empty());
        assert!(bare_ns("3 nsec, 4 nss, ns 5").is_empty());
    }
}
