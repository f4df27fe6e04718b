//! Reads of BPF maps into buffers kept from one read to the next, for the folded flush, which
//! takes every process's histogram out every half interval (2.2 KiB each): libbpf-rs hands
//! each entry of a batch over as two fresh vectors and zeroes a new buffer for every batch,
//! and a per-CPU lookup as one vector per CPU, which a profile of `top --fold on` put at a
//! third of the flush.
//!
//! Invariant: an entry handed over is whole and was written by the kernel in this read
//! (`count` entries of the map's key and value sizes; a per-CPU value's stride is its size
//! rounded up to 8 bytes, as the kernel lays it out).

use libbpf_rs::{libbpf_sys, MapCore};
use std::ffi::c_void;
use std::io;
use std::os::fd::AsRawFd;

/// Buffers for [`Buffers::take_all`] and [`Buffers::lookup_percpu`].
#[derive(Default)]
pub struct Buffers {
    keys: Vec<u8>,
    values: Vec<u8>,
}

/// libbpf's result: 0, or a negative errno.
fn errno(ret: i32) -> i32 {
    if ret < 0 {
        -ret
    } else {
        0
    }
}

impl Buffers {
    /// Takes every entry out of the hash map `map` (lookup and delete, up to `per_call`
    /// entries a syscall), handing each to `f` as its key's and value's bytes; returns how
    /// many. An error stops it (ENOSPC: one hash bucket holds more than `per_call` entries);
    /// what it took before stays taken.
    pub fn take_all<M: MapCore>(
        &mut self,
        map: &M,
        per_call: u32,
        mut f: impl FnMut(&[u8], &[u8]),
    ) -> io::Result<usize> {
        let ks = map.key_size() as usize;
        let vs = map.value_size() as usize;
        let room = per_call.max(1) as usize;
        self.keys.resize(ks * room, 0);
        self.values.resize(vs * room, 0);
        let opts = libbpf_sys::bpf_map_batch_opts {
            sz: std::mem::size_of::<libbpf_sys::bpf_map_batch_opts>() as _,
            elem_flags: 0,
            flags: 0,
        };
        // A hash map's batch position is its next bucket's index (a u32); 8 bytes of room.
        let (mut at, mut next) = (0u64, 0u64);
        let mut first = true;
        let mut taken = 0;
        loop {
            let mut count = room as u32;
            let in_batch: *mut c_void = if first {
                std::ptr::null_mut()
            } else {
                (&raw mut at).cast()
            };
            // SAFETY: the buffers hold `room` keys and values of the map's sizes, `count`
            // says so, the positions have 8 bytes of room, and `opts` is a valid struct.
            let ret = unsafe {
                libbpf_sys::bpf_map_lookup_and_delete_batch(
                    map.as_fd().as_raw_fd(),
                    in_batch,
                    (&raw mut next).cast(),
                    self.keys.as_mut_ptr().cast(),
                    self.values.as_mut_ptr().cast(),
                    &mut count,
                    &opts,
                )
            };
            let err = errno(ret);
            if err == libc::EINTR {
                continue;
            }
            if err != 0 && err != libc::ENOENT {
                return Err(io::Error::from_raw_os_error(err));
            }
            let n = (count as usize).min(room);
            for i in 0..n {
                f(
                    &self.keys[i * ks..(i + 1) * ks],
                    &self.values[i * vs..(i + 1) * vs],
                );
            }
            taken += n;
            if err == libc::ENOENT {
                return Ok(taken);
            }
            at = next;
            first = false;
        }
    }

    /// Looks `key` up in the per-CPU map `map`, handing each possible CPU's value to `f`
    /// with its CPU number; returns whether the key was there.
    pub fn lookup_percpu<M: MapCore>(
        &mut self,
        map: &M,
        key: &[u8],
        mut f: impl FnMut(usize, &[u8]),
    ) -> io::Result<bool> {
        if key.len() != map.key_size() as usize {
            return Err(io::Error::from(io::ErrorKind::InvalidInput));
        }
        // SAFETY: a plain query of the number the kernel reports.
        let cpus = unsafe { libbpf_sys::libbpf_num_possible_cpus() };
        let cpus = usize::try_from(cpus).map_err(|_| io::Error::from_raw_os_error(-cpus))?;
        let vs = map.value_size() as usize;
        let stride = vs.next_multiple_of(8);
        self.values.resize(stride * cpus, 0);
        // SAFETY: `key` has the map's key size and the buffer a value's stride per possible
        // CPU, what the kernel writes for a per-CPU map.
        let ret = unsafe {
            libbpf_sys::bpf_map_lookup_elem(
                map.as_fd().as_raw_fd(),
                key.as_ptr().cast(),
                self.values.as_mut_ptr().cast(),
            )
        };
        match errno(ret) {
            0 => {}
            libc::ENOENT => return Ok(false),
            e => return Err(io::Error::from_raw_os_error(e)),
        }
        for (cpu, v) in self.values.chunks_exact(stride).enumerate() {
            f(cpu, &v[..vs]);
        }
        Ok(true)
    }
}
