# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_lbscope_global_optspecs
    string join \n h/help V/version
end

function __fish_lbscope_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_lbscope_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_lbscope_using_subcommand
    set -l cmd (__fish_lbscope_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c lbscope -n "__fish_lbscope_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c lbscope -n "__fish_lbscope_needs_command" -s V -l version -d 'Print version'
complete -c lbscope -n "__fish_lbscope_needs_command" -f -a "report" -d 'Print run-queue latency, migrations by reason and level, and idle-while-others-wait, per interval, from the live kernel'
complete -c lbscope -n "__fish_lbscope_needs_command" -f -a "top" -d 'The live TUI: CPUs, sched domains, run-queue latency, migrations and findings, refreshed every interval'
complete -c lbscope -n "__fish_lbscope_needs_command" -f -a "replay" -d 'The TUI over a recording: the same views, with a time cursor, pause, step, seek and speed, and the recording\'s metadata on screen'
complete -c lbscope -n "__fish_lbscope_needs_command" -f -a "record" -d 'Record every event the analyzer needs to a file, for `report`, `diff` and `export` later, on any machine'
complete -c lbscope -n "__fish_lbscope_needs_command" -f -a "serve" -d 'Keep tracing in the foreground and expose the figures as OpenMetrics (Prometheus) at http://ADDR:PORT/metrics'
complete -c lbscope -n "__fish_lbscope_needs_command" -f -a "diff" -d 'Compare two recordings, or two sides of several runs each: run-queue latency, migrations by reason and level, idle-while-others-wait, the balancer\'s own counters (schedstat\'s, per level and idle type) and lost events, with whether each change is beyond the noise'
complete -c lbscope -n "__fish_lbscope_needs_command" -f -a "export" -d 'Convert a recording for other tools: Perfetto (ui.perfetto.dev), JSON lines, or both in one pass'
complete -c lbscope -n "__fish_lbscope_needs_command" -f -a "doctor" -d 'Check what this machine allows: kernel, BTF, lockdown, privileges, which tracepoints and balancer hooks load, and the topology. Every problem says what to do'
complete -c lbscope -n "__fish_lbscope_needs_command" -f -a "man" -d 'Print the man page (roff), generated from these definitions'
complete -c lbscope -n "__fish_lbscope_needs_command" -f -a "completions" -d 'Print a shell completion script (the files in completions/ are made by this)'
complete -c lbscope -n "__fish_lbscope_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c lbscope -n "__fish_lbscope_using_subcommand report" -s o -l output -d 'Also record every event to this file while reporting live (see `lbscope record`)' -r -F
complete -c lbscope -n "__fish_lbscope_using_subcommand report" -s i -l interval -d 'Interval length in seconds (fractions allowed)' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand report" -s c -l count -d 'Stop after this many intervals (default: until Ctrl-C)' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand report" -l synthetic -d 'Instead of the kernel, a generated event stream of a machine with this many CPUs (SMT pairs, 16-CPU LLCs, 2 NUMA nodes), for measuring the analyzer at scale. Prints the sustained events per second on stderr at the end' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand report" -l synthetic-events -d 'With --synthetic: stop after this many events (default: until Ctrl-C)' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand report" -l synthetic-rate -d 'With --synthetic: the simulated machine\'s event rate (event time, events per second)' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand report" -l fold -d 'Fold run-queue latency into histograms in the kernel instead of streaming every switch: switches are sent only at idle transitions, wakeups only while a CPU may be idle, nr_running above 2 sampled (at most every ms per CPU). Latency stays exact; idle-while-others-wait counts queued tasks from nr_running (no pinned/movable split, no task filter), per-task waits are not kept. Takes -p, not --comm or --cpus' -r -f -a "auto\t'Fold on machines with more than 64 CPUs and, in `top`, on a machine switching more than 10,000 times a second as it starts (in the busiest 0.1 s of 0.5 s), when no recording is written and neither --comm, --cgroup nor --cpus is given'
on\t'Always fold (refused with a recording, --comm or --cpus)'
off\t'Stream every event'"
complete -c lbscope -n "__fish_lbscope_using_subcommand report" -s p -l pid -d 'Only this process (all its threads)' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand report" -l comm -d 'Only tasks with exactly this name (as in /proc/PID/comm)' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand report" -l cgroup -d 'Only tasks in this cgroup v2 directory or below it: a path under the cgroup2 mount (/sys/fs/cgroup/system.slice/foo.service) or from it (/system.slice/foo.service)' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand report" -l cpus -d 'Only these CPUs, in the kernel\'s list format (0-3,8)' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand report" -l missed-pull-ms -d 'missed_pull: how long a CPU may stay idle while a movable task waits (default per domain: 2 × its CPU count in ms × (cache_nice_tries + 1) + 10 ms for the nohz kick, what the kernel\'s rules allow)' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand report" -l ping-pong-ms -d 'ping_pong: the window of an A -> B -> A round trip' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand report" -l churn-per-s -d 'churn: migrations per second into one domain above which it is judged' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand report" -l spread-ratio -d 'uneven_spread: the fullest node or LLC must hold more than this many times the emptiest one\'s threads' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand report" -l spread-min-threads -d 'uneven_spread: processes (and cgroups) with fewer running threads are not judged' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand report" -l spread-hold-ms -d 'uneven_spread: how long a process must stay uneven (sampled every 20 ms) before it is reported; a spread still uneven at an interval\'s end is reported then too' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand report" -l max-findings -d 'Finding details kept per interval (all are counted by kind)' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand report" -l ringbuf-mb -d 'Ring buffer size in MiB (a power of two). Larger loses fewer events under bursts' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand report" -l ringbuf-kb -d 'Ring buffer size in KiB instead (a power of two, at least 4): a tiny buffer shows how lost events are counted and marked' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand report" -l attach -d 'How to attach the tracepoint programs' -r -f -a "auto\t'tp_btf, and raw_tp if the kernel refuses tp_btf'
tp-btf\t'BTF-typed tracepoints only'
raw-tp\t'Raw tracepoints only'"
complete -c lbscope -n "__fish_lbscope_using_subcommand report" -l balancer-attach -d 'How to attach the balancer hooks, which record the kernel\'s own balancer decisions (struct lb_env): fentry/fexit, or kprobe/kretprobe on kernels without BPF trampolines; both give the same records. `auto` tries fentry, then kprobe, then runs from the tracepoints alone and says why; naming a kind fails (exit 1) when the kernel refuses it. `lbscope doctor` shows which kinds load here' -r -f -a "auto\t'fentry, then kprobe where the kernel refuses fentry or has no BPF trampolines, then none (tracepoints only), saying why'
fentry\t'fentry/fexit only: fails when the kernel refuses them'
kprobe\t'kprobe/kretprobe only: fails when the kernel refuses them'"
complete -c lbscope -n "__fish_lbscope_using_subcommand report" -l json -d 'One JSON object per interval, one per line'
complete -c lbscope -n "__fish_lbscope_using_subcommand report" -l validate -d 'Validation mode: sets the kernel\'s own balancer decisions (struct lb_env, recorded only where fentry on the balancer loads: `lbscope doctor` says whether it does) against the model\'s, per domain level (balanced or not, migration type), and the stack-derived migration reasons against the kernel\'s idle type. Printed after the intervals (JSON: a last line `{"validation": {...}}`). Fails on a kernel or recording without them'
complete -c lbscope -n "__fish_lbscope_using_subcommand report" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c lbscope -n "__fish_lbscope_using_subcommand top" -s i -l interval -d 'Refresh interval in seconds: the analyzer\'s interval (`+`/`-` change it)' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand top" -l fold -d 'Fold run-queue latency into histograms in the kernel instead of streaming every switch: switches are sent only at idle transitions, wakeups only while a CPU may be idle, nr_running above 2 sampled (at most every ms per CPU). Latency stays exact; idle-while-others-wait counts queued tasks from nr_running (no pinned/movable split, no task filter), per-task waits are not kept. Takes -p, not --comm or --cpus' -r -f -a "auto\t'Fold on machines with more than 64 CPUs and, in `top`, on a machine switching more than 10,000 times a second as it starts (in the busiest 0.1 s of 0.5 s), when no recording is written and neither --comm, --cgroup nor --cpus is given'
on\t'Always fold (refused with a recording, --comm or --cpus)'
off\t'Stream every event'"
complete -c lbscope -n "__fish_lbscope_using_subcommand top" -s p -l pid -d 'Only this process (all its threads)' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand top" -l comm -d 'Only tasks with exactly this name (as in /proc/PID/comm)' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand top" -l cgroup -d 'Only tasks in this cgroup v2 directory or below it: a path under the cgroup2 mount (/sys/fs/cgroup/system.slice/foo.service) or from it (/system.slice/foo.service)' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand top" -l cpus -d 'Only these CPUs, in the kernel\'s list format (0-3,8)' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand top" -l missed-pull-ms -d 'missed_pull: how long a CPU may stay idle while a movable task waits (default per domain: 2 × its CPU count in ms × (cache_nice_tries + 1) + 10 ms for the nohz kick, what the kernel\'s rules allow)' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand top" -l ping-pong-ms -d 'ping_pong: the window of an A -> B -> A round trip' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand top" -l churn-per-s -d 'churn: migrations per second into one domain above which it is judged' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand top" -l spread-ratio -d 'uneven_spread: the fullest node or LLC must hold more than this many times the emptiest one\'s threads' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand top" -l spread-min-threads -d 'uneven_spread: processes (and cgroups) with fewer running threads are not judged' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand top" -l spread-hold-ms -d 'uneven_spread: how long a process must stay uneven (sampled every 20 ms) before it is reported; a spread still uneven at an interval\'s end is reported then too' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand top" -l max-findings -d 'Finding details kept per interval (all are counted by kind)' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand top" -l ringbuf-mb -d 'Ring buffer size in MiB (a power of two). Larger loses fewer events under bursts' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand top" -l ringbuf-kb -d 'Ring buffer size in KiB instead (a power of two, at least 4): a tiny buffer shows how lost events are counted and marked' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand top" -l attach -d 'How to attach the tracepoint programs' -r -f -a "auto\t'tp_btf, and raw_tp if the kernel refuses tp_btf'
tp-btf\t'BTF-typed tracepoints only'
raw-tp\t'Raw tracepoints only'"
complete -c lbscope -n "__fish_lbscope_using_subcommand top" -l balancer-attach -d 'How to attach the balancer hooks, which record the kernel\'s own balancer decisions (struct lb_env): fentry/fexit, or kprobe/kretprobe on kernels without BPF trampolines; both give the same records. `auto` tries fentry, then kprobe, then runs from the tracepoints alone and says why; naming a kind fails (exit 1) when the kernel refuses it. `lbscope doctor` shows which kinds load here' -r -f -a "auto\t'fentry, then kprobe where the kernel refuses fentry or has no BPF trampolines, then none (tracepoints only), saying why'
fentry\t'fentry/fexit only: fails when the kernel refuses them'
kprobe\t'kprobe/kretprobe only: fails when the kernel refuses them'"
complete -c lbscope -n "__fish_lbscope_using_subcommand top" -l demo -d 'Replay the small recording shipped with lbscope instead of the live kernel (no root needed)'
complete -c lbscope -n "__fish_lbscope_using_subcommand top" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c lbscope -n "__fish_lbscope_using_subcommand replay" -s i -l interval -d 'Interval length in seconds (`+`/`-` change it)' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand replay" -l speed -d 'Replay speed: recording seconds per second (`[`/`]` change it)' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand replay" -s p -l pid -d 'Only this process (all its threads)' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand replay" -l comm -d 'Only tasks with exactly this name (as in /proc/PID/comm)' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand replay" -l cgroup -d 'Only tasks in this cgroup v2 directory or below it: a path under the cgroup2 mount (/sys/fs/cgroup/system.slice/foo.service) or from it (/system.slice/foo.service)' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand replay" -l cpus -d 'Only these CPUs, in the kernel\'s list format (0-3,8)' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand replay" -l missed-pull-ms -d 'missed_pull: how long a CPU may stay idle while a movable task waits (default per domain: 2 × its CPU count in ms × (cache_nice_tries + 1) + 10 ms for the nohz kick, what the kernel\'s rules allow)' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand replay" -l ping-pong-ms -d 'ping_pong: the window of an A -> B -> A round trip' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand replay" -l churn-per-s -d 'churn: migrations per second into one domain above which it is judged' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand replay" -l spread-ratio -d 'uneven_spread: the fullest node or LLC must hold more than this many times the emptiest one\'s threads' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand replay" -l spread-min-threads -d 'uneven_spread: processes (and cgroups) with fewer running threads are not judged' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand replay" -l spread-hold-ms -d 'uneven_spread: how long a process must stay uneven (sampled every 20 ms) before it is reported; a spread still uneven at an interval\'s end is reported then too' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand replay" -l max-findings -d 'Finding details kept per interval (all are counted by kind)' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand replay" -s h -l help -d 'Print help'
complete -c lbscope -n "__fish_lbscope_using_subcommand record" -s o -l output -d 'The recording to write (created 0600; an existing file is replaced, a symlink refused)' -r -F
complete -c lbscope -n "__fish_lbscope_using_subcommand record" -s d -l duration -d 'Stop after this many seconds (default: until Ctrl-C)' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand record" -l cgroup -d 'Refused: a recording keeps every task; filter when reading it (lbscope report FILE --cgroup PATH)' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand record" -l ringbuf-mb -d 'Ring buffer size in MiB (a power of two). Larger loses fewer events under bursts' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand record" -l ringbuf-kb -d 'Ring buffer size in KiB instead (a power of two, at least 4): a tiny buffer shows how lost events are counted and marked' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand record" -l attach -d 'How to attach the tracepoint programs' -r -f -a "auto\t'tp_btf, and raw_tp if the kernel refuses tp_btf'
tp-btf\t'BTF-typed tracepoints only'
raw-tp\t'Raw tracepoints only'"
complete -c lbscope -n "__fish_lbscope_using_subcommand record" -l balancer-attach -d 'How to attach the balancer hooks, which record the kernel\'s own balancer decisions (struct lb_env): fentry/fexit, or kprobe/kretprobe on kernels without BPF trampolines; both give the same records. `auto` tries fentry, then kprobe, then runs from the tracepoints alone and says why; naming a kind fails (exit 1) when the kernel refuses it. `lbscope doctor` shows which kinds load here' -r -f -a "auto\t'fentry, then kprobe where the kernel refuses fentry or has no BPF trampolines, then none (tracepoints only), saying why'
fentry\t'fentry/fexit only: fails when the kernel refuses them'
kprobe\t'kprobe/kretprobe only: fails when the kernel refuses them'"
complete -c lbscope -n "__fish_lbscope_using_subcommand record" -l ring -d 'Keep the last SECS seconds of events in memory and write them as a recording when a trigger fires or SIGUSR1 arrives' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand record" -l ring-mb -d 'The ring\'s memory limit: whichever of --ring and this is reached first bounds it' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand record" -l trigger -d 'Dump when an interval meets this: a finding rate KIND>=N/s (KIND: missed_pull, busy_wakeup, harmful_migration, ping_pong, churn, uneven_spread, or findings for any) or a run-queue latency STAT>=DURATION (STAT: p50, p90, p99, p999, max; e.g. p99>=5ms). Repeatable; a trigger that fired rests for the ring\'s length' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand record" -s q -l quiet -d 'No progress line on stderr'
complete -c lbscope -n "__fish_lbscope_using_subcommand record" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c lbscope -n "__fish_lbscope_using_subcommand serve" -l listen -d 'Address and port of the /metrics endpoint (loopback only by default: name an address to be scraped from other hosts)' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand serve" -s i -l interval -d 'Interval in seconds: the metrics advance when one closes' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand serve" -l fold -d 'Fold run-queue latency into histograms in the kernel instead of streaming every switch: switches are sent only at idle transitions, wakeups only while a CPU may be idle, nr_running above 2 sampled (at most every ms per CPU). Latency stays exact; idle-while-others-wait counts queued tasks from nr_running (no pinned/movable split, no task filter), per-task waits are not kept. Takes -p, not --comm or --cpus' -r -f -a "auto\t'Fold on machines with more than 64 CPUs and, in `top`, on a machine switching more than 10,000 times a second as it starts (in the busiest 0.1 s of 0.5 s), when no recording is written and neither --comm, --cgroup nor --cpus is given'
on\t'Always fold (refused with a recording, --comm or --cpus)'
off\t'Stream every event'"
complete -c lbscope -n "__fish_lbscope_using_subcommand serve" -s p -l pid -d 'Only this process (all its threads)' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand serve" -l comm -d 'Only tasks with exactly this name (as in /proc/PID/comm)' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand serve" -l cgroup -d 'Only tasks in this cgroup v2 directory or below it: a path under the cgroup2 mount (/sys/fs/cgroup/system.slice/foo.service) or from it (/system.slice/foo.service)' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand serve" -l cpus -d 'Only these CPUs, in the kernel\'s list format (0-3,8)' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand serve" -l missed-pull-ms -d 'missed_pull: how long a CPU may stay idle while a movable task waits (default per domain: 2 × its CPU count in ms × (cache_nice_tries + 1) + 10 ms for the nohz kick, what the kernel\'s rules allow)' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand serve" -l ping-pong-ms -d 'ping_pong: the window of an A -> B -> A round trip' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand serve" -l churn-per-s -d 'churn: migrations per second into one domain above which it is judged' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand serve" -l spread-ratio -d 'uneven_spread: the fullest node or LLC must hold more than this many times the emptiest one\'s threads' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand serve" -l spread-min-threads -d 'uneven_spread: processes (and cgroups) with fewer running threads are not judged' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand serve" -l spread-hold-ms -d 'uneven_spread: how long a process must stay uneven (sampled every 20 ms) before it is reported; a spread still uneven at an interval\'s end is reported then too' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand serve" -l max-findings -d 'Finding details kept per interval (all are counted by kind)' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand serve" -l ringbuf-mb -d 'Ring buffer size in MiB (a power of two). Larger loses fewer events under bursts' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand serve" -l ringbuf-kb -d 'Ring buffer size in KiB instead (a power of two, at least 4): a tiny buffer shows how lost events are counted and marked' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand serve" -l attach -d 'How to attach the tracepoint programs' -r -f -a "auto\t'tp_btf, and raw_tp if the kernel refuses tp_btf'
tp-btf\t'BTF-typed tracepoints only'
raw-tp\t'Raw tracepoints only'"
complete -c lbscope -n "__fish_lbscope_using_subcommand serve" -l balancer-attach -d 'How to attach the balancer hooks, which record the kernel\'s own balancer decisions (struct lb_env): fentry/fexit, or kprobe/kretprobe on kernels without BPF trampolines; both give the same records. `auto` tries fentry, then kprobe, then runs from the tracepoints alone and says why; naming a kind fails (exit 1) when the kernel refuses it. `lbscope doctor` shows which kinds load here' -r -f -a "auto\t'fentry, then kprobe where the kernel refuses fentry or has no BPF trampolines, then none (tracepoints only), saying why'
fentry\t'fentry/fexit only: fails when the kernel refuses them'
kprobe\t'kprobe/kretprobe only: fails when the kernel refuses them'"
complete -c lbscope -n "__fish_lbscope_using_subcommand serve" -l process-latency -d 'A run-queue latency histogram for the processes of this name (lbscope_process_runqlat_seconds{comm="NAME"}); repeatable, at most 32 names, so that label values stay bounded' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand serve" -l ring -d 'Keep the last SECS seconds of events in memory and write them as a recording when a trigger fires or SIGUSR1 arrives' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand serve" -l ring-mb -d 'The ring\'s memory limit: whichever of --ring and this is reached first bounds it' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand serve" -l trigger -d 'Dump when an interval meets this: a finding rate KIND>=N/s (KIND: missed_pull, busy_wakeup, harmful_migration, ping_pong, churn, uneven_spread, or findings for any) or a run-queue latency STAT>=DURATION (STAT: p50, p90, p99, p999, max; e.g. p99>=5ms). Repeatable; a trigger that fired rests for the ring\'s length' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand serve" -l dump-dir -d 'Where the flight recorder writes its dumps (created 0700 if missing; needs --ring)' -r -F
complete -c lbscope -n "__fish_lbscope_using_subcommand serve" -l max-dumps-per-hour -d 'At most this many dumps in any hour; more are skipped and counted' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand serve" -l dump-dir-max-mb -d 'The dumps in --dump-dir hold at most this many MiB; a dump that would pass it is skipped and counted (no dump already written is removed)' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand serve" -l dump-on-post -d 'Also dump on an HTTP POST to /dump on the --listen address'
complete -c lbscope -n "__fish_lbscope_using_subcommand serve" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c lbscope -n "__fish_lbscope_using_subcommand diff" -s i -l interval -d 'Interval length in seconds the noise estimate resamples (one run a side)' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand diff" -l format -d 'Output: a table for the terminal, one JSON object, or a Markdown table for a cover letter' -r -f -a "text\t'A table within 80 columns, with the latency histograms'
json\t'The comparison as one JSON object'
markdown\t'A GitHub-flavoured Markdown table headed by the runs, kernels and topology'"
complete -c lbscope -n "__fish_lbscope_using_subcommand diff" -s p -l pid -d 'Only this process (all its threads)' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand diff" -l comm -d 'Only tasks with exactly this name (as in /proc/PID/comm)' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand diff" -l cgroup -d 'Only tasks in this cgroup v2 directory or below it: a path under the cgroup2 mount (/sys/fs/cgroup/system.slice/foo.service) or from it (/system.slice/foo.service)' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand diff" -l cpus -d 'Only these CPUs, in the kernel\'s list format (0-3,8)' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand diff" -l missed-pull-ms -d 'missed_pull: how long a CPU may stay idle while a movable task waits (default per domain: 2 × its CPU count in ms × (cache_nice_tries + 1) + 10 ms for the nohz kick, what the kernel\'s rules allow)' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand diff" -l ping-pong-ms -d 'ping_pong: the window of an A -> B -> A round trip' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand diff" -l churn-per-s -d 'churn: migrations per second into one domain above which it is judged' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand diff" -l spread-ratio -d 'uneven_spread: the fullest node or LLC must hold more than this many times the emptiest one\'s threads' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand diff" -l spread-min-threads -d 'uneven_spread: processes (and cgroups) with fewer running threads are not judged' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand diff" -l spread-hold-ms -d 'uneven_spread: how long a process must stay uneven (sampled every 20 ms) before it is reported; a spread still uneven at an interval\'s end is reported then too' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand diff" -l max-findings -d 'Finding details kept per interval (all are counted by kind)' -r
complete -c lbscope -n "__fish_lbscope_using_subcommand diff" -l json -d 'The comparison as one JSON object (the same as --format json)'
complete -c lbscope -n "__fish_lbscope_using_subcommand diff" -l tui -d 'Show the comparison in the TUI (rows and histograms side by side)'
complete -c lbscope -n "__fish_lbscope_using_subcommand diff" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c lbscope -n "__fish_lbscope_using_subcommand export" -l perfetto -d 'Write a Perfetto trace here' -r -F
complete -c lbscope -n "__fish_lbscope_using_subcommand export" -l jsonl -d 'Write one JSON event per line here (`-` for stdout)' -r -F
complete -c lbscope -n "__fish_lbscope_using_subcommand export" -s h -l help -d 'Print help'
complete -c lbscope -n "__fish_lbscope_using_subcommand doctor" -l json -d 'Print the findings as one JSON object'
complete -c lbscope -n "__fish_lbscope_using_subcommand doctor" -s h -l help -d 'Print help'
complete -c lbscope -n "__fish_lbscope_using_subcommand man" -s h -l help -d 'Print help'
complete -c lbscope -n "__fish_lbscope_using_subcommand completions" -s h -l help -d 'Print help'
complete -c lbscope -n "__fish_lbscope_using_subcommand help; and not __fish_seen_subcommand_from report top replay record serve diff export doctor man completions help" -f -a "report" -d 'Print run-queue latency, migrations by reason and level, and idle-while-others-wait, per interval, from the live kernel'
complete -c lbscope -n "__fish_lbscope_using_subcommand help; and not __fish_seen_subcommand_from report top replay record serve diff export doctor man completions help" -f -a "top" -d 'The live TUI: CPUs, sched domains, run-queue latency, migrations and findings, refreshed every interval'
complete -c lbscope -n "__fish_lbscope_using_subcommand help; and not __fish_seen_subcommand_from report top replay record serve diff export doctor man completions help" -f -a "replay" -d 'The TUI over a recording: the same views, with a time cursor, pause, step, seek and speed, and the recording\'s metadata on screen'
complete -c lbscope -n "__fish_lbscope_using_subcommand help; and not __fish_seen_subcommand_from report top replay record serve diff export doctor man completions help" -f -a "record" -d 'Record every event the analyzer needs to a file, for `report`, `diff` and `export` later, on any machine'
complete -c lbscope -n "__fish_lbscope_using_subcommand help; and not __fish_seen_subcommand_from report top replay record serve diff export doctor man completions help" -f -a "serve" -d 'Keep tracing in the foreground and expose the figures as OpenMetrics (Prometheus) at http://ADDR:PORT/metrics'
complete -c lbscope -n "__fish_lbscope_using_subcommand help; and not __fish_seen_subcommand_from report top replay record serve diff export doctor man completions help" -f -a "diff" -d 'Compare two recordings, or two sides of several runs each: run-queue latency, migrations by reason and level, idle-while-others-wait, the balancer\'s own counters (schedstat\'s, per level and idle type) and lost events, with whether each change is beyond the noise'
complete -c lbscope -n "__fish_lbscope_using_subcommand help; and not __fish_seen_subcommand_from report top replay record serve diff export doctor man completions help" -f -a "export" -d 'Convert a recording for other tools: Perfetto (ui.perfetto.dev), JSON lines, or both in one pass'
complete -c lbscope -n "__fish_lbscope_using_subcommand help; and not __fish_seen_subcommand_from report top replay record serve diff export doctor man completions help" -f -a "doctor" -d 'Check what this machine allows: kernel, BTF, lockdown, privileges, which tracepoints and balancer hooks load, and the topology. Every problem says what to do'
complete -c lbscope -n "__fish_lbscope_using_subcommand help; and not __fish_seen_subcommand_from report top replay record serve diff export doctor man completions help" -f -a "man" -d 'Print the man page (roff), generated from these definitions'
complete -c lbscope -n "__fish_lbscope_using_subcommand help; and not __fish_seen_subcommand_from report top replay record serve diff export doctor man completions help" -f -a "completions" -d 'Print a shell completion script (the files in completions/ are made by this)'
complete -c lbscope -n "__fish_lbscope_using_subcommand help; and not __fish_seen_subcommand_from report top replay record serve diff export doctor man completions help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
