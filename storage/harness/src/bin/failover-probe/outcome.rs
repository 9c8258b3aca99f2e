//! What one probe put saw, as the client got it, and how it is classified:
//! by status, body code, who answered (a node or Envoy itself, and which
//! node, relative to the one killed) and when it was sent relative to the
//! kill.

use std::collections::HashMap;

use crate::access_log::EnvoyRecord;

/// One put of the probe.
#[derive(Debug, Clone)]
pub struct Put {
    /// The request path, unique to the put (Envoy's access log is keyed by it).
    pub path: String,
    /// When it was sent, in ms relative to the kill (negative: before it).
    pub sent_ms: f64,
    pub latency_ms: f64,
    pub answer: Answer,
    /// Envoy's record of it, once the access log has been read.
    pub envoy: Option<EnvoyRecord>,
}

#[derive(Debug, Clone)]
pub enum Answer {
    Ok,
    /// An HTTP answer other than 200: its status and the body's `code`.
    Status {
        status: u16,
        code: String,
        message: String,
    },
    /// No HTTP answer at all (connection error, client timeout).
    Transport(String),
}

/// Which node a request reached, as seen from the kill.
pub struct Roles<'a> {
    pub killed: u64,
    /// `127.0.0.1:PORT` of every node, by id.
    pub addresses: &'a HashMap<String, u64>,
}

impl Roles<'_> {
    fn describe(&self, upstream: &str) -> String {
        match self.addresses.get(upstream) {
            Some(&id) if id == self.killed => format!("killed leader {id}"),
            Some(&id) => format!("survivor {id}"),
            None if upstream.is_empty() || upstream == "-" => "no node".to_string(),
            None => upstream.to_string(),
        }
    }
}

impl Put {
    /// The kind of a failed put, for counting: status, code, who made the
    /// answer (Envoy's flags and details name a local reply), and which
    /// node the last attempt went to.
    pub fn error_kind(&self, roles: &Roles) -> Option<String> {
        let answer = match &self.answer {
            Answer::Ok => return None,
            Answer::Status { status, code, .. } => format!("{status} {code}"),
            Answer::Transport(e) => format!("no answer ({e})"),
        };
        Some(match &self.envoy {
            Some(e) => format!(
                "{answer}; envoy flags {} ({}), last of {} attempt(s) to {}",
                e.flags,
                e.details,
                e.attempts,
                roles.describe(&e.upstream)
            ),
            None => format!("{answer}; not in Envoy's access log"),
        })
    }

    /// Why a put took long, as far as Envoy's record tells: how many
    /// attempts it made, where the last one went, and how the time splits
    /// between the attempts before the last (with their back-off) and the
    /// last one itself.
    pub fn cause(&self, roles: &Roles) -> String {
        let answer = match &self.answer {
            Answer::Ok => "200".to_string(),
            Answer::Status {
                status,
                code,
                message,
            } => {
                format!("{status} {code} \"{}\"", truncate(message, 70))
            }
            Answer::Transport(e) => format!("no answer ({e})"),
        };
        let Some(e) = &self.envoy else {
            return format!("{answer}; not in Envoy's access log");
        };
        // Envoy's upstream time runs from the end of the client's request
        // to the last try's answer, across every try and back-off, so only
        // the number of tries tells retries from one slow try.
        let in_envoy = e
            .duration_ms
            .map_or(String::new(), |d| format!(", {d:.0} ms in Envoy"));
        format!(
            "{answer}; {} attempt(s), last to {}, flags {}{in_envoy}",
            e.attempts,
            roles.describe(&e.upstream),
            e.flags
        )
    }
}

fn truncate(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(answer: Answer, envoy: Option<EnvoyRecord>) -> Put {
        Put {
            path: "/v1/kv/p".into(),
            sent_ms: 3.0,
            latency_ms: 200.0,
            answer,
            envoy,
        }
    }

    #[test]
    fn an_error_names_its_code_its_flags_and_the_node_it_reached() {
        let addresses = HashMap::from([("127.0.0.1:1".to_string(), 1), ("127.0.0.1:2".into(), 2)]);
        let roles = Roles {
            killed: 1,
            addresses: &addresses,
        };
        let reset = put(
            Answer::Status {
                status: 504,
                code: "OUTCOME_UNKNOWN".into(),
                message: "m".into(),
            },
            Some(EnvoyRecord {
                flags: "UC".into(),
                details: "upstream_reset".into(),
                attempts: 1,
                upstream: "127.0.0.1:1".into(),
                duration_ms: Some(2.0),
            }),
        );
        assert_eq!(
            reset.error_kind(&roles).unwrap(),
            "504 OUTCOME_UNKNOWN; envoy flags UC (upstream_reset), last of 1 attempt(s) to killed leader 1"
        );
        let retried = put(
            Answer::Ok,
            Some(EnvoyRecord {
                attempts: 3,
                upstream: "127.0.0.1:2".into(),
                flags: "-".into(),
                duration_ms: Some(200.0),
                ..EnvoyRecord::default()
            }),
        );
        assert_eq!(retried.error_kind(&roles), None);
        assert_eq!(
            retried.cause(&roles),
            "200; 3 attempt(s), last to survivor 2, flags -, 200 ms in Envoy"
        );
    }
}
