//! The blocking client of a session socket (attach, ls, tests): one request line out, one
//! reply line back; an `ok:false` reply is an error carrying its text.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::{Request, Status};

/// A blocking client of a session socket (attach, ls, tests): one request, one reply.
pub struct Client {
    stream: std::os::unix::net::UnixStream,
    reader: std::io::BufReader<std::os::unix::net::UnixStream>,
}

impl Client {
    /// Connect to `sock`, with replies awaited at most `timeout`.
    pub fn connect(sock: &Path, timeout: Duration) -> std::io::Result<Client> {
        let stream = std::os::unix::net::UnixStream::connect(sock)?;
        stream.set_read_timeout(Some(timeout))?;
        stream.set_write_timeout(Some(timeout))?;
        let reader = std::io::BufReader::new(stream.try_clone()?);
        Ok(Client { stream, reader })
    }

    /// Send one request, read its reply; an `ok:false` reply is an error with its text.
    pub fn ask(&mut self, req: &Request) -> anyhow::Result<Value> {
        use std::io::{BufRead, Write};
        let mut line = serde_json::to_string(req)?;
        line.push('\n');
        self.stream.write_all(line.as_bytes())?;
        let mut reply = String::new();
        if self.reader.read_line(&mut reply)? == 0 {
            anyhow::bail!("the supervisor closed the connection");
        }
        let v: Value = serde_json::from_str(reply.trim())
            .map_err(|e| anyhow::anyhow!("bad reply from the supervisor: {e}"))?;
        if v.get("ok") == Some(&Value::Bool(true)) {
            Ok(v)
        } else {
            let e = v.get("error").and_then(Value::as_str).unwrap_or("error");
            anyhow::bail!("{e}")
        }
    }

    /// The session's status.
    pub fn status(&mut self) -> anyhow::Result<Status> {
        let v = self.ask(&Request::Status)?;
        let s = v
            .get("status")
            .cloned()
            .ok_or_else(|| anyhow::anyhow!("bad reply from the supervisor: no status"))?;
        Ok(serde_json::from_value(s)?)
    }
}
