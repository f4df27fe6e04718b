//! Output tests.
