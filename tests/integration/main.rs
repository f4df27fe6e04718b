//! The one integration test binary: command-line behaviour, and live tests that run the real
//! BPF programs on this kernel and compare their figures with perf, bpftrace and runqlat.

mod balancer_attach;
mod cgroup;
mod cli;
mod common;
mod diff_counters;
mod diff_runs;
mod faults;
mod flight;
mod live;
mod mapio;
mod model;
mod outputs;
mod record;
mod runqueue;
mod serve;
mod tui;
mod tui_timeline;
