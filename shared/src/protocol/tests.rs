//! Wire format tests: every message round-trips, bad lines are clear errors.

use super::*;

#[test]
fn batch_mode_strings() {
    for (s, m) in [
        ("single", BatchMode::Single),
        ("batch:4", BatchMode::Batch(4)),
        ("sps", BatchMode::Sps),
        ("pipelined:2", BatchMode::Pipelined(2)),
    ] {
        assert_eq!(s.parse::<BatchMode>().unwrap(), m);
        assert_eq!(m.to_string(), s);
    }
    assert!("batch:0".parse::<BatchMode>().is_err());
    assert!("turbo".parse::<BatchMode>().is_err());
    assert!("single:3".parse::<BatchMode>().is_err());
}

#[test]
fn unknown_type_and_fields() {
    assert_eq!(
        parse_event(r#"{"ts":1,"type":"teleport"}"#),
        Err(ProtocolError::UnknownType("teleport".into()))
    );
    let m = parse_event(r#"{"ts":5,"type":"bye","reason":"done","proofs_done":2,"x":1}"#).unwrap();
    assert_eq!(m.ts, 5);
    assert!(matches!(m.event, Event::Bye { proofs_done: 2, .. }));
    assert!(matches!(
        parse_event("{not json"),
        Err(ProtocolError::Json(_))
    ));
    assert_eq!(parse_event(r#"{"ts":1}"#), Err(ProtocolError::MissingType));
}

#[test]
fn newer_major_refused() {
    let line = r#"{"ts":1,"type":"hello","protocol":"2.0","prover_version":"x","pid":1,"backend":"cpu","config":{"partitions":1,"constraints":1,"circuit":"c","mode":"single"}}"#;
    assert!(matches!(
        parse_event(line),
        Err(ProtocolError::NewerMajor { .. })
    ));
    let ok = line.replace("2.0", "1.7");
    assert!(parse_event(&ok).is_ok());
}

#[test]
fn every_variant_is_a_known_phase_read_back_from_its_wire_name() {
    // Its place in the list, by an exhaustive match: a new variant fails to compile here
    // until it has one.
    let place = |p: &Phase| match p {
        Phase::SrsGenerate => 0,
        Phase::SrsLoad => 1,
        Phase::Synthesis => 2,
        Phase::Prove => 3,
        Phase::GpuSetup => 4,
        Phase::FftH => 5,
        Phase::MsmH => 6,
        Phase::MsmL => 7,
        Phase::MsmAB1 => 8,
        Phase::MsmB2 => 9,
        Phase::Verify => 10,
        Phase::Other(_) => usize::MAX,
    };
    for (i, p) in KNOWN_PHASES.iter().enumerate() {
        assert_eq!(place(p), i, "{p}");
        assert_eq!(&Phase::from(p.as_str().to_string()), p);
        let wire = serde_json::to_string(p).unwrap();
        assert_eq!(&serde_json::from_str::<Phase>(&wire).unwrap(), p);
    }
}

#[test]
fn phases_roundtrip_unknown() {
    let p: Phase = serde_json::from_str("\"warp_drive\"").unwrap();
    assert_eq!(p, Phase::Other("warp_drive".into()));
    assert_eq!(serde_json::to_string(&Phase::MsmB2).unwrap(), "\"msm_b2\"");
}
