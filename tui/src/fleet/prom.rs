//! A client of Prometheus's HTTP API (`/api/v1/query`, `/api/v1/query_range`): what the fleet
//! screen reads. Contract: every call is bounded by the client's timeout (connect and read
//! together), a body larger than [`MAX_BODY`] is refused, and anything that is not the API's
//! JSON (an HTML login page, a proxy's error, garbage) is one line naming the URL and what
//! came back (its first bytes, made inert). Label values are kept as Prometheus gives them;
//! whoever prints one makes it inert ([`crate::text::inert`]).

use std::collections::BTreeMap;
use std::io::Read;
use std::time::{Duration, Instant};

use serde_json::Value;

/// Largest answer read, bytes: a fleet of thousands of hosts answers well below it.
pub const MAX_BODY: u64 = 64 << 20;

/// One series of an instant query: its labels, its value and the sample's unix time.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub labels: BTreeMap<String, String>,
    pub value: f64,
    pub t: f64,
}

/// One series of a range query: its labels and (unix seconds, value) points.
#[derive(Debug, Clone, PartialEq)]
pub struct Range {
    pub labels: BTreeMap<String, String>,
    pub points: Vec<(f64, f64)>,
}

/// A Prometheus server.
pub struct Prom {
    base: String,
    agent: ureq::Agent,
    timeout: Duration,
}

/// What one query returned, with the server's warnings (partial data) and how long it took.
#[derive(Debug, Clone)]
pub struct Answer<T> {
    pub data: T,
    pub warnings: Vec<String>,
    pub took: Duration,
}

impl Prom {
    /// A client of the server at `url` (`http://host:9090`, a path prefix allowed); every
    /// request gives up after `timeout`.
    pub fn new(url: &str, timeout: Duration) -> anyhow::Result<Prom> {
        let base = url.trim().trim_end_matches('/').to_string();
        if !base.starts_with("http://") {
            anyhow::bail!(
                "--prometheus {}: want an http:// URL such as http://prometheus:9090 (for \
                 https, a local proxy or an SSH tunnel)",
                crate::text::inert(url)
            );
        }
        let agent = ureq::AgentBuilder::new()
            .timeout(timeout)
            .redirects(0)
            .build();
        Ok(Prom {
            base,
            agent,
            timeout,
        })
    }

    /// The server's URL as given.
    pub fn url(&self) -> &str {
        &self.base
    }

    /// `query` at the server's now.
    pub fn instant(&self, query: &str) -> anyhow::Result<Answer<Vec<Series>>> {
        let (data, warnings, took) = self.get("query", &[("query", query.to_string())])?;
        let series = vector(&data).map_err(|e| self.bad(e))?;
        Ok(Answer {
            data: series,
            warnings,
            took,
        })
    }

    /// `query` from `start` to `end` (unix seconds) every `step` seconds.
    pub fn range(
        &self,
        query: &str,
        start: f64,
        end: f64,
        step: f64,
    ) -> anyhow::Result<Answer<Vec<Range>>> {
        let args = [
            ("query", query.to_string()),
            ("start", format!("{start:.3}")),
            ("end", format!("{end:.3}")),
            ("step", format!("{step:.3}")),
        ];
        let (data, warnings, took) = self.get("query_range", &args)?;
        let series = matrix(&data).map_err(|e| self.bad(e))?;
        Ok(Answer {
            data: series,
            warnings,
            took,
        })
    }

    fn bad(&self, what: String) -> anyhow::Error {
        anyhow::anyhow!("Prometheus at {}: {what}", self.base)
    }

    /// GET `/api/v1/<what>`: the answer's `data`, its warnings and the time taken.
    fn get(
        &self,
        what: &str,
        args: &[(&str, String)],
    ) -> anyhow::Result<(Value, Vec<String>, Duration)> {
        let t0 = Instant::now();
        let mut req = self.agent.get(&format!("{}/api/v1/{what}", self.base));
        for (k, v) in args {
            req = req.query(k, v);
        }
        let resp = match req.call() {
            Ok(r) => r,
            // The API answers 400/422/503 with its own JSON error: read it below.
            Err(ureq::Error::Status(_, r)) => r,
            Err(ureq::Error::Transport(t)) => {
                let timed_out =
                    t0.elapsed() >= self.timeout.saturating_sub(Duration::from_millis(50));
                return Err(self.bad(if timed_out {
                    format!("no answer within {:.0?}", self.timeout)
                } else {
                    // Its text starts with the whole URL (the query in it): the why is after.
                    let text = t.to_string();
                    let why = match text.split_once("://") {
                        Some((_, rest)) => rest.split_once(": ").map_or(rest, |(_, w)| w),
                        None => &text,
                    };
                    format!("cannot query: {}", one_line(why))
                }));
            }
        };
        let code = resp.status();
        let kind = resp.content_type().to_string();
        let mut body = Vec::new();
        resp.into_reader()
            .take(MAX_BODY + 1)
            .read_to_end(&mut body)
            .map_err(|e| {
                self.bad(
                    if t0.elapsed() >= self.timeout.saturating_sub(Duration::from_millis(50)) {
                        format!("no whole answer within {:.0?}", self.timeout)
                    } else {
                        format!("reading the answer: {}", one_line(&e.to_string()))
                    },
                )
            })?;
        if body.len() as u64 > MAX_BODY {
            return Err(self.bad(format!("answer larger than {MAX_BODY} bytes")));
        }
        let v: Value = serde_json::from_slice(&body).map_err(|e| {
            self.bad(format!(
                "not the Prometheus API: HTTP {code}, {}, body starts {:?} ({e})",
                if kind.is_empty() {
                    "no content type"
                } else {
                    &kind
                },
                head(&body)
            ))
        })?;
        match v.get("status").and_then(Value::as_str) {
            Some("success") => {}
            Some("error") => {
                let e = v
                    .get("error")
                    .and_then(Value::as_str)
                    .unwrap_or("no error text");
                return Err(self.bad(format!("HTTP {code}: {}", one_line(e))));
            }
            _ => {
                return Err(self.bad(format!(
                    "not the Prometheus API: HTTP {code}, JSON without a status, starts {:?}",
                    head(&body)
                )))
            }
        }
        let warnings = v
            .get("warnings")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(one_line).collect())
            .unwrap_or_default();
        let data = v.get("data").cloned().unwrap_or(Value::Null);
        Ok((data, warnings, t0.elapsed()))
    }
}

/// The first bytes of an answer, as text on one line.
fn head(body: &[u8]) -> String {
    let s = String::from_utf8_lossy(&body[..body.len().min(60)]);
    one_line(&s)
}

/// Text from the server on one line, inert.
fn one_line(s: &str) -> String {
    crate::text::inert(s.trim()).into_owned()
}

fn labels(v: &Value) -> Result<BTreeMap<String, String>, String> {
    let m = v
        .get("metric")
        .and_then(Value::as_object)
        .ok_or("a series without labels")?;
    Ok(m.iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
        .collect())
}

/// `[1712345678.9, "123"]`: the time and the value (`NaN`, `+Inf` as Prometheus spells them).
fn point(v: &Value) -> Result<(f64, f64), String> {
    let p = v
        .as_array()
        .filter(|a| a.len() == 2)
        .ok_or("a sample that is not [time, value]")?;
    let t = p[0].as_f64().ok_or("a sample time that is not a number")?;
    let s = p[1].as_str().ok_or("a sample value that is not a string")?;
    let x = s
        .parse::<f64>()
        .map_err(|_| format!("a sample value {:?} that is not a number", one_line(s)))?;
    Ok((t, x))
}

fn result<'a>(data: &'a Value, want: &str) -> Result<&'a Vec<Value>, String> {
    let kind = data
        .get("resultType")
        .and_then(Value::as_str)
        .unwrap_or("none");
    if kind != want {
        return Err(format!("answer of type {kind:?}, want {want:?}"));
    }
    data.get("result")
        .and_then(Value::as_array)
        .ok_or_else(|| "answer without a result".to_string())
}

/// An instant vector (a scalar reads as one series without labels).
fn vector(data: &Value) -> Result<Vec<Series>, String> {
    if data.get("resultType").and_then(Value::as_str) == Some("scalar") {
        let (t, value) = point(data.get("result").unwrap_or(&Value::Null))?;
        return Ok(vec![Series {
            labels: BTreeMap::new(),
            value,
            t,
        }]);
    }
    result(data, "vector")?
        .iter()
        .map(|s| {
            let (t, value) = point(s.get("value").unwrap_or(&Value::Null))?;
            Ok(Series {
                labels: labels(s)?,
                value,
                t,
            })
        })
        .collect()
}

fn matrix(data: &Value) -> Result<Vec<Range>, String> {
    result(data, "matrix")?
        .iter()
        .map(|s| {
            let points = s
                .get("values")
                .and_then(Value::as_array)
                .ok_or("a range series without values")?
                .iter()
                .map(point)
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Range {
                labels: labels(s)?,
                points,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vector_a_scalar_and_bad_shapes_are_read_or_named() {
        let v: Value = serde_json::from_str(
            r#"{"resultType":"vector","result":[{"metric":{"instance":"a\u001b[2J"},"value":[10.5,"3"]}]}"#,
        )
        .unwrap();
        let s = vector(&v).unwrap();
        assert_eq!(s[0].value, 3.0);
        assert_eq!(s[0].labels["instance"], "a\x1b[2J");
        let sc: Value =
            serde_json::from_str(r#"{"resultType":"scalar","result":[1,"NaN"]}"#).unwrap();
        assert!(vector(&sc).unwrap()[0].value.is_nan());
        let bad: Value = serde_json::from_str(
            r#"{"resultType":"vector","result":[{"metric":{},"value":[1,"x"]}]}"#,
        )
        .unwrap();
        assert!(vector(&bad).unwrap_err().contains("not a number"));
        let m: Value = serde_json::from_str(r#"{"resultType":"matrix","result":[]}"#).unwrap();
        assert!(vector(&m).unwrap_err().contains("matrix"));
    }

    #[test]
    fn only_http_urls_are_taken() {
        assert!(Prom::new("https://x", Duration::from_secs(1)).is_err());
        assert_eq!(
            Prom::new("http://x:9090/", Duration::from_secs(1))
                .unwrap()
                .url(),
            "http://x:9090"
        );
    }
}
