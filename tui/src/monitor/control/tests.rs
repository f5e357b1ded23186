//! The socket's names, the uid check, the request format, stale sockets and the lock.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::locate::lock_path;
use super::*;

/// A current-thread runtime for the binds (a server needs one to listen on).
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_session_id_is_the_stem_and_pid_and_a_default_name_as_it_is() {
    let pid = std::process::id();
    assert_eq!(session_id(Path::new("/d/s.ptop")), format!("s-{pid}"));
    assert_eq!(
        session_id(Path::new("/d/a b;c.ptop")),
        format!("a_b_c-{pid}")
    );
    assert_eq!(
        session_id(Path::new("/d/provetop-20261202-013000-17.ptop")),
        "provetop-20261202-013000-17"
    );
}

#[test]
fn only_the_owner_uid_may_connect() {
    assert!(peer_allowed(1000, 1000).is_ok());
    let e = peer_allowed(1001, 1000).unwrap_err();
    assert_eq!(
        e,
        "refused: this session belongs to uid 1000, the connection is from uid 1001"
    );
}

#[test]
fn requests_are_tagged_json_and_unknown_fields_are_refused() {
    let r: Request =
        serde_json::from_str(r#"{"cmd":"control","control":{"type":"set_mode","mode":"batch:2"}}"#)
            .unwrap();
    assert!(r.changes_something());
    let r: Request = serde_json::from_str(r#"{"cmd":"status"}"#).unwrap();
    assert_eq!(r, Request::Status);
    assert!(!r.changes_something());
    assert!(serde_json::from_str::<Request>(r#"{"cmd":"mark","text":"x","y":1}"#).is_err());
    assert!(serde_json::from_str::<Request>(r#"{"cmd":"format_disk"}"#).is_err());
}

#[test]
fn a_socket_whose_lock_nobody_holds_is_stale_and_removed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert!(matches!(probe(d, "s"), Probe::Missing));
    std::fs::write(socket_path(d, "s"), b"").unwrap();
    std::fs::write(lock_path(d, "s"), b"").unwrap();
    assert!(matches!(probe(d, "s"), Probe::Stale));
    assert!(!socket_path(d, "s").exists());
}

#[test]
fn a_second_supervisor_cannot_take_a_live_sessions_socket() {
    let rt = runtime();
    rt.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let a = ControlServer::bind_in(dir.path(), "s", None).unwrap();
        let e = ControlServer::bind_in(dir.path(), "s", None).err().unwrap();
        assert!(e
            .to_string()
            .contains("another supervisor already serves session s"));
        assert!(matches!(probe(dir.path(), "s"), Probe::Live(_)));
        let mode = std::fs::metadata(a.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        drop(a);
        assert!(matches!(probe(dir.path(), "s"), Probe::Missing));
    });
}

#[test]
fn a_link_planted_at_the_lock_is_never_followed_and_its_target_keeps_its_mode_and_bytes() {
    let rt = runtime();
    rt.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let sockets = dir.path().join("sockets");
        std::fs::create_dir(&sockets).unwrap();
        std::fs::set_permissions(&sockets, std::fs::Permissions::from_mode(0o700)).unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o644)).unwrap();
        let untouched = || {
            let m = std::fs::metadata(&victim).unwrap().permissions().mode();
            assert_eq!(m & 0o777, 0o644, "the link's target had its mode changed");
            assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        };
        // A symbolic link, then a hard link, at the lock's name.
        std::os::unix::fs::symlink(&victim, lock_path(&sockets, "s")).unwrap();
        let e = ControlServer::bind_in(&sockets, "s", None).err().unwrap();
        assert!(format!("{e:#}").contains("cannot open"), "{e:#}");
        untouched();
        std::fs::remove_file(lock_path(&sockets, "s")).unwrap();
        std::fs::hard_link(&victim, lock_path(&sockets, "s")).unwrap();
        let e = ControlServer::bind_in(&sockets, "s", None).err().unwrap();
        assert!(
            format!("{e:#}").contains("not a private regular file"),
            "{e:#}"
        );
        untouched();
        assert!(!socket_path(&sockets, "s").exists());
    });
}

#[test]
fn a_socket_name_is_short_whatever_the_sessions_id() {
    let long = "x".repeat(500);
    assert_eq!(key(&long).len(), 16);
    assert_ne!(key("s-1"), key("s-2"));
    assert_eq!(
        socket_path(Path::new("/d"), "s-1"),
        Path::new("/d").join(format!("{}.sock", key("s-1")))
    );
}
