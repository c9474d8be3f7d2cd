//! okd-install command line.
fn main() {}
