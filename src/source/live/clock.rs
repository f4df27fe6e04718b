//! The kernel clocks the BPF timestamps are taken on, read from user space.

fn read(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into the valid, exclusively borrowed `ts`.
    unsafe { libc::clock_gettime(id, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CLOCK_MONOTONIC in ns: the clock of `bpf_ktime_get_ns`.
pub fn monotonic_ns() -> u64 {
    read(libc::CLOCK_MONOTONIC)
}

/// Unix-epoch ns minus monotonic ns: add it to an event timestamp for wall time.
pub fn realtime_offset_ns() -> i64 {
    let a = monotonic_ns();
    let r = read(libc::CLOCK_REALTIME);
    let b = monotonic_ns();
    r as i64 - (a / 2 + b / 2) as i64
}
