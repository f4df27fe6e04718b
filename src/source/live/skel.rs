//! The generated libbpf-rs skeletons of bpf/lbscope.bpf.c (with the record types of
//! bpf/lbscope.h) and bpf/balancer.bpf.c.
#![allow(clippy::all, missing_docs, non_camel_case_types, dead_code)]
include!(concat!(env!("OUT_DIR"), "/lbscope.skel.rs"));

/// The balancer fentry hooks.
pub mod balancer {
    #![allow(clippy::all, missing_docs, non_camel_case_types, dead_code)]
    include!(concat!(env!("OUT_DIR"), "/balancer.skel.rs"));
}
