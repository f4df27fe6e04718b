//! Compiles bpf/lbscope.bpf.c into a libbpf-rs skeleton in OUT_DIR when the `bpf` feature is
//! on; without it the pure core builds with no clang.

fn main() {
    println!("cargo:rerun-if-changed=bpf");
    #[cfg(feature = "bpf")]
    bpf::build();
}

#[cfg(feature = "bpf")]
mod bpf {
    use libbpf_cargo::SkeletonBuilder;
    use std::path::PathBuf;

    pub fn build() {
        let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR set by cargo"));
        let arch = match std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() {
            Ok("x86_64") => "x86",
            Ok(other) => panic!(
                "no vendored vmlinux.h for target arch {other}: add bpf/vmlinux/<arch>/vmlinux.h"
            ),
            Err(_) => "x86",
        };
        let vmlinux = format!("-Ibpf/vmlinux/{arch}");
        for name in ["lbscope", "balancer"] {
            if let Err(e) = SkeletonBuilder::new()
                .source(format!("bpf/{name}.bpf.c"))
                .clang_args([
                    vmlinux.as_str(),
                    "-Ibpf",
                    "-D__TARGET_ARCH_x86",
                    "-Wall",
                    "-O2",
                    "-g",
                ])
                .build_and_generate(out.join(format!("{name}.skel.rs")))
            {
                panic!(
                    "building bpf/{name}.bpf.c failed: {e:#}\n\
                     (needs clang; install it with `apt-get install clang`, or build the pure \
                     core with --no-default-features)"
                );
            }
        }
    }
}
