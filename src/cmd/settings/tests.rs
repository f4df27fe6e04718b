//! Every flag check and flag combination: each refusal one line naming its flag.

use super::*;
use crate::cli::{FoldMode, FOLD_AUTO_CPUS, FOLD_AUTO_SWITCHES};

/// The message of a refusal, which must name the flag.
fn refusal<T: std::fmt::Debug>(r: Result<T, CmdError>, flag: &str) -> String {
    let e = r.expect_err("refused");
    assert!(matches!(e, CmdError::Usage(_)), "{e:?}");
    let m = e.to_string();
    assert!(m.starts_with(flag) && !m.contains('\n'), "{m}");
    m
}

#[test]
fn cgroup_paths_from_the_mount_or_under_it() {
    let m = Some(Path::new("/sys/fs/cgroup"));
    let any = Some(|_: &Path| true);
    let none = Some(|_: &Path| false);
    let rec = None::<fn(&Path) -> bool>;
    let ok = |r: Result<Option<String>, CmdError>| r.unwrap();
    let want = Some("/system.slice/a.service".to_string());
    assert_eq!(
        ok(cgroup("/sys/fs/cgroup/system.slice/a.service/", m, any)),
        want
    );
    assert_eq!(ok(cgroup("/system.slice//a.service", m, any)), want);
    assert_eq!(ok(cgroup("/system.slice/a.service", None, rec)), want);
    assert_eq!(
        ok(cgroup("/sys/fs/cgroup", m, any)),
        None,
        "the root is everything"
    );
    refusal(cgroup("system.slice", m, rec), "--cgroup 'system.slice'");
    refusal(cgroup("/a/../b", m, rec), "--cgroup '/a/../b'");
    let e = refusal(cgroup("/nope", m, none), "--cgroup '/nope'");
    assert!(e.contains("not a directory under the cgroup2 mount"), "{e}");
    let e = refusal(cgroup("/a", None, any), "--cgroup '/a'");
    assert!(e.contains("no cgroup2 mount"), "{e}");
    refusal(record_cgroup(Some("/a")), "--cgroup '/a'");
    record_cgroup(None).unwrap();
}

#[test]
fn every_flag_is_checked_with_a_one_line_refusal() {
    assert_eq!(interval_ns(0.5).unwrap(), 500_000_000);
    refusal(interval_ns(0.0), "-i 0");
    refusal(interval_ns(f64::NAN), "-i NaN");
    assert_eq!(count(Some(3)).unwrap(), Some(3));
    refusal(count(Some(0)), "-c 0");
    assert_eq!(speed(2.0).unwrap(), 2.0);
    refusal(speed(0.0), "--speed 0");
    refusal(speed(f64::INFINITY), "--speed inf");
    assert_eq!(
        duration(Some(1.5)).unwrap(),
        Some(std::time::Duration::from_millis(1500))
    );
    assert_eq!(duration(None).unwrap(), None);
    refusal(duration(Some(-1.0)), "--duration -1");
    assert_eq!(synthetic_cpus(64).unwrap(), 64);
    refusal(synthetic_cpus(1), "--synthetic 1");
    assert_eq!(listen("127.0.0.1:9464").unwrap().port(), 9464);
    refusal(listen("127.0.0.1"), "--listen 127.0.0.1");
    refusal(listen("127.0.0.1:99999"), "--listen 127.0.0.1:99999");
    let topo = Topology::synthetic_flat(4);
    let f = |cpus: &str| FilterArgs {
        cpus: Some(cpus.into()),
        ..Default::default()
    };
    assert!(filter(&f("0-1"), &topo, false).unwrap().cpus.is_some());
    let m = refusal(filter(&f("2-9"), &topo, false), "--cpus '2-9'");
    assert!(m.contains("online CPUs are 0-3"), "{m}");
    refusal(filter(&f("x"), &topo, false), "--cpus 'x'");
    let comm = FilterArgs {
        comm: Some("a-name-longer-than-15".into()),
        ..Default::default()
    };
    refusal(filter(&comm, &topo, false), "--comm");
    let dir = std::env::temp_dir();
    refusal(check_output(&dir), &dir.display().to_string());
    refusal(
        check_output(std::path::Path::new("/nonexistent-dir/x.lbs")),
        "/nonexistent-dir/x.lbs",
    );
}

#[test]
fn fold_when_asked_or_when_big_or_busy() {
    let none = FilterArgs::default();
    let pid = FilterArgs {
        pid: Some(7),
        ..Default::default()
    };
    let comm = FilterArgs {
        comm: Some("x".into()),
        ..Default::default()
    };
    let cpus = FilterArgs {
        cpus: Some("0-3".into()),
        ..Default::default()
    };
    let cgroup = FilterArgs {
        cgroup: Some("/a".into()),
        ..Default::default()
    };
    let big = FOLD_AUTO_CPUS + 1;
    // auto: only big machines, and never where folding would lose what was asked for.
    assert!(!folds(FoldMode::Auto, false, &none, FOLD_AUTO_CPUS, None).unwrap());
    assert!(folds(FoldMode::Auto, false, &none, big, None).unwrap());
    assert!(folds(FoldMode::Auto, false, &pid, big, None).unwrap());
    assert!(!folds(FoldMode::Auto, true, &none, big, None).unwrap());
    assert!(!folds(FoldMode::Auto, false, &comm, big, None).unwrap());
    assert!(!folds(FoldMode::Auto, false, &cpus, big, None).unwrap());
    assert!(!folds(FoldMode::Auto, false, &cgroup, big, None).unwrap());
    // auto in `top`: also a busy machine of any size, under the same conditions.
    let busy = Some(FOLD_AUTO_SWITCHES + 1);
    assert!(!folds(FoldMode::Auto, false, &none, 2, Some(FOLD_AUTO_SWITCHES)).unwrap());
    assert!(folds(FoldMode::Auto, false, &none, 2, busy).unwrap());
    assert!(folds(FoldMode::Auto, false, &pid, 2, busy).unwrap());
    assert!(!folds(FoldMode::Auto, false, &comm, 2, busy).unwrap());
    assert!(!folds(FoldMode::Auto, false, &cpus, 2, busy).unwrap());
    assert!(!folds(FoldMode::Auto, true, &none, 2, busy).unwrap());
    assert!(!folds(FoldMode::Off, false, &none, 2, busy).unwrap());
    // top measures the rate only where it decides.
    assert!(fold_turns_on_rate(FoldMode::Auto, &none, 2));
    assert!(fold_turns_on_rate(FoldMode::Auto, &pid, FOLD_AUTO_CPUS));
    assert!(!fold_turns_on_rate(FoldMode::Auto, &none, big));
    for f in [&comm, &cpus, &cgroup] {
        assert!(!fold_turns_on_rate(FoldMode::Auto, f, 2));
    }
    assert!(!fold_turns_on_rate(FoldMode::On, &none, 2));
    assert!(!fold_turns_on_rate(FoldMode::Off, &none, 2));
    // on: refused where it cannot keep its promise, with the reason.
    assert!(folds(FoldMode::On, false, &pid, 2, None).unwrap());
    for (rec, f, why) in [
        (true, &none, "recording"),
        (false, &comm, "by process"),
        (false, &cgroup, "not by cgroup"),
        (false, &cpus, "--cpus"),
    ] {
        let e = folds(FoldMode::On, rec, f, 2, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--fold on") && e.contains(why), "{e}");
    }
    assert!(!folds(FoldMode::Off, false, &none, big, None).unwrap());
}

fn serve(args: &[&str]) -> crate::cli::ServeArgs {
    use clap::Parser;
    let argv = ["lbscope", "serve"].iter().chain(args).copied();
    match crate::cli::Cli::try_parse_from(argv)
        .expect("parses")
        .command
    {
        crate::cli::Command::Serve(a) => a,
        _ => unreachable!(),
    }
}

#[test]
fn flight_recorder_flags_are_checked_together() {
    let tmp = std::env::temp_dir().join(format!("lbscope-settings-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let d = tmp.join("dumps");
    let ds = d.to_str().unwrap();
    // Nothing asked: no ring.
    let a = serve(&[]);
    assert!(flight(&a.flight).unwrap().is_none());
    assert!(dump_dir(&a, false).unwrap().is_none());
    // A whole configuration: the directory is created 0700.
    let a = serve(&["--ring", "30", "--dump-dir", ds, "--trigger", "p99>=5ms"]);
    let (limits, triggers) = flight(&a.flight).unwrap().unwrap();
    assert_eq!(limits.span_ns, 30_000_000_000);
    assert_eq!(limits.max_bytes, 256 << 20);
    assert_eq!(triggers.len(), 1);
    assert!(dump_dir(&a, true).unwrap().is_some());
    let mode = std::os::unix::fs::PermissionsExt::mode(&d.metadata().unwrap().permissions());
    assert_eq!(mode & 0o777, 0o700);
    // Refusals, one line each, naming the flag.
    refusal(
        flight(&serve(&["--trigger", "p99>=5ms"]).flight),
        "--trigger",
    );
    let m = refusal(
        flight(&serve(&["--ring", "1", "--trigger", "p99>5ms"]).flight),
        "--trigger",
    );
    assert!(m.contains("p99>=5ms"), "{m}");
    refusal(flight(&serve(&["--ring", "0"]).flight), "--ring 0");
    refusal(flight(&serve(&["--ring", "7200"]).flight), "--ring 7200");
    refusal(
        flight(&serve(&["--ring", "5", "--ring-mb", "0"]).flight),
        "--ring-mb 0",
    );
    refusal(dump_dir(&serve(&["--ring", "5"]), true), "--ring");
    refusal(dump_dir(&serve(&["--dump-dir", ds]), false), "--dump-dir");
    refusal(
        dump_dir(&serve(&["--dump-on-post"]), false),
        "--dump-on-post",
    );
    refusal(
        dump_dir(
            &serve(&["--ring", "5", "--dump-dir", ds, "--max-dumps-per-hour", "0"]),
            true,
        ),
        "--max-dumps-per-hour 0",
    );
    refusal(
        dump_dir(
            &serve(&["--ring", "5", "--dump-dir", ds, "--dump-dir-max-mb", "0"]),
            true,
        ),
        "--dump-dir-max-mb 0",
    );
    // A file where the directory should be, and a directory that cannot be made.
    let file = tmp.join("file");
    std::fs::write(&file, b"x").unwrap();
    let fs = file.to_str().unwrap();
    let m = refusal(
        dump_dir(&serve(&["--ring", "5", "--dump-dir", fs]), true),
        "--dump-dir",
    );
    assert!(m.contains("not a directory"), "{m}");
    let under = format!("{fs}/sub");
    let m = refusal(
        dump_dir(&serve(&["--ring", "5", "--dump-dir", &under]), true),
        "--dump-dir",
    );
    assert!(m.contains("cannot create it"), "{m}");
    let _ = std::fs::remove_dir_all(&tmp);
}
