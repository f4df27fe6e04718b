//! Kernel text symbols from /proc/kallsyms, for naming the frames of migration stacks.

use std::io::{BufRead, BufReader};

/// Sorted kernel text symbols.
#[derive(Debug, Default)]
pub struct Kallsyms {
    syms: Vec<(u64, String)>,
}

impl Kallsyms {
    /// Reads `/proc/kallsyms`. Addresses read as zero (no privileges, or `kptr_restrict`)
    /// leave the table empty, which [`Kallsyms::is_usable`] reports.
    pub fn load() -> std::io::Result<Kallsyms> {
        let f = std::fs::File::open("/proc/kallsyms")?;
        Ok(Self::parse(BufReader::new(f)))
    }

    /// Parses kallsyms text: `ffffffff81000000 T _stext [module]`.
    pub fn parse(r: impl BufRead) -> Kallsyms {
        let mut syms = Vec::with_capacity(200_000);
        for line in r.lines().map_while(Result::ok) {
            let mut it = line.split_ascii_whitespace();
            let (Some(addr), Some(ty), Some(name)) = (it.next(), it.next(), it.next()) else {
                continue;
            };
            if !matches!(ty, "t" | "T" | "w" | "W") {
                continue;
            }
            let Ok(addr) = u64::from_str_radix(addr, 16) else {
                continue;
            };
            if addr != 0 {
                syms.push((addr, name.to_string()));
            }
        }
        syms.sort_unstable_by_key(|s| s.0);
        Kallsyms { syms }
    }

    /// Whether real addresses were readable.
    pub fn is_usable(&self) -> bool {
        !self.syms.is_empty()
    }

    /// The symbol containing `addr`, or a hex address.
    pub fn name(&self, addr: u64) -> String {
        let i = self.syms.partition_point(|s| s.0 <= addr);
        if i == 0 {
            return format!("0x{addr:x}");
        }
        self.syms[i - 1].1.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup() {
        let k = Kallsyms::parse(
            "ffffffff81000100 T set_task_cpu\nffffffff81000000 t try_to_wake_up\nffffffff81000200 D data\n"
                .as_bytes(),
        );
        assert!(k.is_usable());
        assert_eq!(k.name(0xffffffff81000050), "try_to_wake_up");
        assert_eq!(k.name(0xffffffff81000150), "set_task_cpu");
        assert_eq!(k.name(0x10), "0x10");
    }
}
