//! The file system side: private mode, no writing through links or into non-files, and the
//! errors of opening something that is not a recording file.

use super::{header, tmp};
use crate::record::{Reader, RecordError, Writer};
use std::os::unix::fs::PermissionsExt;

#[test]
fn recordings_are_created_0600() {
    let p = tmp("mode.lbs");
    Writer::create(&p, &header()).unwrap().finish().unwrap();
    let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o600);
    // An existing, readable file is truncated and made private.
    std::fs::write(&p, vec![7u8; 100_000]).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
    let s = Writer::create(&p, &header()).unwrap().finish().unwrap();
    let m = std::fs::metadata(&p).unwrap();
    assert_eq!(m.permissions().mode() & 0o7777, 0o600);
    assert_eq!(m.len(), s.bytes);
    assert!(Reader::open(&p).is_ok());
    let _ = std::fs::remove_file(&p);
}

#[test]
fn a_symlink_at_the_output_is_refused() {
    let target = tmp("link-target");
    std::fs::write(&target, b"keep").unwrap();
    let link = tmp("link.lbs");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let e = Writer::create(&link, &header()).err().expect("refused");
    assert!(matches!(e, RecordError::Symlink { .. }), "{e}");
    assert!(e.to_string().contains("symbolic link"), "{e}");
    assert_eq!(std::fs::read(&target).unwrap(), b"keep");
    // A dangling link is refused too, and nothing is created at its target.
    let _ = std::fs::remove_file(&target);
    assert!(matches!(
        Writer::create(&link, &header()),
        Err(RecordError::Symlink { .. })
    ));
    assert!(!target.exists());
    let _ = std::fs::remove_file(&link);
}

#[test]
fn directories_and_missing_parents_are_refused() {
    let dir = std::env::temp_dir();
    let e = Writer::create(&dir, &header()).err().expect("refused");
    assert!(matches!(e, RecordError::NotRegularFile { .. }), "{e}");
    let e = Writer::create(&dir.join("no-such-dir-lbscope/x.lbs"), &header())
        .err()
        .expect("refused");
    assert!(matches!(e, RecordError::Create { .. }), "{e}");
    assert!(e.to_string().contains("No such file"), "{e}");
}

#[test]
fn a_fifo_is_refused_without_hanging() {
    let p = tmp("fifo.lbs");
    let made = std::process::Command::new("mkfifo")
        .arg(&p)
        .status()
        .is_ok_and(|s| s.success());
    assert!(made, "mkfifo (coreutils) makes a FIFO at {}", p.display());
    let e = Writer::create(&p, &header()).err().expect("refused");
    assert!(matches!(e, RecordError::NotRegularFile { .. }), "{e}");
    let _ = std::fs::remove_file(&p);
}

#[test]
fn opening_what_is_not_a_recording_file() {
    let missing = tmp("missing.lbs");
    let e = Reader::open(&missing).err().expect("refused");
    assert!(matches!(e, RecordError::Open { .. }), "{e}");
    assert!(e.to_string().contains("No such file"), "{e}");
    assert!(e.to_string().contains("missing.lbs"), "{e}");

    let e = Reader::open(&std::env::temp_dir()).err().expect("refused");
    assert!(matches!(e, RecordError::IsDirectory { .. }), "{e}");
    assert!(e.to_string().contains("directory"), "{e}");

    let empty = tmp("empty.lbs");
    std::fs::write(&empty, b"").unwrap();
    let e = Reader::open(&empty).err().expect("refused");
    assert!(matches!(e, RecordError::Empty { .. }), "{e}");
    assert!(e.to_string().contains("empty.lbs: is empty"), "{e}");
    let _ = std::fs::remove_file(&empty);
}
