//! The percsim command line.
fn main() {}
