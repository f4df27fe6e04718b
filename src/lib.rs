//! lbscope: observe the Linux scheduler's load balancer from tracepoints.
//!
//! The crate is one pipeline: a source (live kernel or recording) yields [`event::Event`]s,
//! the pure [`analyze::Analyzer`] folds them into [`analyze::Snapshot`]s, and sinks print them.

pub mod analyze;
pub mod civil;
pub mod cli;
pub mod cmd;
pub mod cpuset;
pub mod diff;
pub mod event;
pub mod flight;
pub mod foldset;
pub(crate) mod idhash;
pub mod model;
pub mod output;
pub mod pipeline;
pub mod reason;
pub mod record;
pub mod reorder;
pub mod schedstat;
pub mod selfcost;
pub mod source;
pub mod topology;
pub mod tui;
pub mod validate;
