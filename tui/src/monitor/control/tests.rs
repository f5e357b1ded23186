//! The socket's names, the uid check, the request format, stale sockets and the lock.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::locate::lock_path;
use super::*;

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
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let a = ControlServer::bind_in(dir.path(), "s").unwrap();
        let e = ControlServer::bind_in(dir.path(), "s").err().unwrap();
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
