//! The `lbscope` binary: parse the command line, dispatch, map errors to exit codes.
fn main() {}
