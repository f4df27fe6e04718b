//! The generated libbpf-rs skeleton of bpf/lbscope.bpf.c and its record types (bpf/lbscope.h).
#![allow(clippy::all, missing_docs, non_camel_case_types, dead_code)]
include!(concat!(env!("OUT_DIR"), "/lbscope.skel.rs"));
