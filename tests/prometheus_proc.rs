//! A real Prometheus server for the service group's tests: started on a free loopback port
//! with its own TSDB and log under the test's directory.

use std::path::Path;
use std::process::{Child, Command, Stdio};

/// `bin` serving `config`, its data and log in `dir`, listening on 127.0.0.1:`port`.
pub fn spawn(bin: &Path, dir: &Path, config: &Path, port: u16) -> Child {
    let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
    Command::new(bin)
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("tsdb").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .arg("--log.level=warn")
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("start prometheus")
}
