//! The keys of a transaction, an op, a store cell and a store version in a
//! history file, as the format declares them (the field names of
//! [`crate::Transaction`], [`crate::Op`], [`crate::CellState`] and
//! [`crate::Version`]), and the names of the op kinds. Both readers of a
//! file know a key by its index here, which is also its bit in a set of
//! keys seen: the serde visitors (`reader.rs`) and the hand-written
//! scanner (`fastread.rs`), which takes the usual shape and leaves the rest
//! to the visitors. The keys of the document and of `final_state` are read
//! by the visitors only, and listed there.

/// A transaction's keys.
pub(crate) const TXN: &[&str] = &[
    "id",
    "client",
    "start_ts",
    "commit_ts",
    "invoke_ns",
    "complete_ns",
    "outcome",
    "abort_reason",
    "ops",
    "observer",
    "scans",
];

/// An op's keys.
pub(crate) const OP: &[&str] = &["f", "row", "col", "value"];

/// The values of an op's `f`: read, write, delete.
pub(crate) const KINDS: &[&str] = &["read", "write", "delete"];

/// A store cell's keys.
pub(crate) const CELL: &[&str] = &["row", "col", "versions"];

/// A store version's keys.
pub(crate) const VERSION: &[&str] = &["start_ts", "commit_ts", "kind", "value", "data_missing"];
