//! The folded flush's map reads (`lbscope::source::live::mapio`) against real BPF maps made
//! for the test: every entry taken once, whatever the batches' room and the buckets' sizes.

use crate::common::*;
use lbscope::source::live::mapio::Buffers;
use libbpf_rs::{libbpf_sys, MapCore, MapFlags, MapHandle, MapType};

/// A map made for the test, with 4-byte keys.
fn new_map(kind: MapType, name: &str, value_size: u32, entries: u32) -> MapHandle {
    let opts = libbpf_sys::bpf_map_create_opts {
        sz: std::mem::size_of::<libbpf_sys::bpf_map_create_opts>() as _,
        ..Default::default()
    };
    MapHandle::create(kind, Some(name), 4, value_size, entries, &opts)
        .unwrap_or_else(|e| panic!("a {kind:?} map (root with CAP_BPF): {e}"))
}

/// A value that names its key in every byte position.
fn value(k: u32) -> Vec<u8> {
    (0..24u32).map(|i| (k.wrapping_mul(31) + i) as u8).collect()
}

/// Keys 0 to 699, each with its [`value`].
fn fill(map: &MapHandle) {
    for k in 0..700u32 {
        map.update(&k.to_ne_bytes(), &value(k), MapFlags::ANY)
            .expect("update");
    }
}

/// 700 processes in a 1,024-entry hash map come out exactly once each, with their own
/// values, through batches of 32 that end short wherever a bucket would not fit; the map is
/// left empty, and a second take finds nothing.
#[test]
fn a_batched_take_gives_every_entry_once_and_empties_the_map() {
    let Some(_guard) = live_guard() else {
        return;
    };
    let map = new_map(MapType::Hash, "lbs_t_take", 24, 1024);
    fill(&map);
    let mut bufs = Buffers::default();
    let mut seen = vec![0u32; 700];
    let n = bufs
        .take_all(&map, 32, |k, v| {
            let k = u32::from_ne_bytes(k.try_into().expect("4-byte key"));
            assert_eq!(v, value(k), "key {k}'s value");
            seen[k as usize] += 1;
        })
        .expect("take_all");
    assert_eq!(n, 700);
    assert!(seen.iter().all(|c| *c == 1), "each key once: {seen:?}");
    assert_eq!(map.keys().count(), 0, "the map is empty");
    let again = bufs
        .take_all(&map, 32, |_, _| panic!("nothing left"))
        .expect("take_all");
    assert_eq!(again, 0);

    // Room for one entry a call: the first bucket holding two stops the take with ENOSPC,
    // and what was taken before it is out of the map, each entry once.
    fill(&map);
    let mut taken = Vec::new();
    let err = bufs
        .take_all(&map, 1, |k, _| {
            taken.push(u32::from_ne_bytes(k.try_into().expect("4-byte key")))
        })
        .expect_err("a bucket of two in 700 keys over 1,024 buckets");
    assert_eq!(err.raw_os_error(), Some(libc::ENOSPC), "{err}");
    let left: Vec<u32> = map
        .keys()
        .map(|k| u32::from_ne_bytes(k[..].try_into().expect("4-byte key")))
        .collect();
    let mut all: Vec<u32> = taken.iter().chain(&left).copied().collect();
    all.sort_unstable();
    assert_eq!(
        all,
        (0..700).collect::<Vec<_>>(),
        "taken and left: every key once"
    );
}

/// A per-CPU lookup hands each possible CPU its own value, a 12-byte value read at the
/// kernel's 16-byte stride; a missing key says so.
#[test]
fn a_per_cpu_lookup_gives_each_cpu_its_value() {
    let Some(_guard) = live_guard() else {
        return;
    };
    let map = new_map(MapType::PercpuHash, "lbs_t_pcpu", 12, 4);
    let cpus = lbscope::source::live::possible_cpus();
    let vals: Vec<Vec<u8>> = (0..cpus).map(|c| vec![c as u8 + 1; 12]).collect();
    map.update_percpu(&7u32.to_ne_bytes(), &vals, MapFlags::ANY)
        .expect("update");
    let mut bufs = Buffers::default();
    let mut got = Vec::new();
    let found = bufs
        .lookup_percpu(&map, &7u32.to_ne_bytes(), |cpu, v| {
            got.push((cpu, v.to_vec()))
        })
        .expect("lookup");
    assert!(found);
    let want: Vec<(usize, Vec<u8>)> = vals.into_iter().enumerate().collect();
    assert_eq!(got, want);
    let missing = bufs
        .lookup_percpu(&map, &8u32.to_ne_bytes(), |_, _| panic!("no such key"))
        .expect("lookup");
    assert!(!missing);
}
