//! One RESP connection's state and what its commands do: each goes to the
//! same service core as REST and gRPC (`crate::core`), with the same
//! consistency and durability, the same roles (`AUTH` takes the cluster's
//! tokens) and, for writes, the same admission and deadline
//! (`crate::admission`, `crate::deadline`).

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::http::{HeaderMap, HeaderValue, header};
use bytes::Bytes;
use redis_protocol::resp2::types::BytesFrame;
use strata_auth::Role;
use strata_proto::v1::{
    BatchOp, BatchRequest, CompareAndSwapRequest, DeleteRequest, GetRequest, KeyRange, PutOp,
    PutRequest, ScanRequest, batch_op, scan_request,
};

use super::command::{Command, Scan, Set};
use super::pattern::Pattern;
use crate::admission::WriteBudget;
use crate::auth::{Guard, credential};
use crate::core::{Core, Hop};
use crate::error::ApiError;
use crate::tcp_front::Connections;

/// Scans a connection may keep open at once; past it the oldest is
/// forgotten (its cursor then answers "invalid cursor").
const OPEN_SCANS: usize = 64;

/// What a command answered, and whether the connection ends after it.
pub struct Answer {
    pub reply: BytesFrame,
    pub close: bool,
}

impl From<BytesFrame> for Answer {
    fn from(reply: BytesFrame) -> Self {
        Answer {
            reply,
            close: false,
        }
    }
}

pub struct Session {
    core: Arc<Core>,
    guard: Arc<Guard>,
    budget: Arc<WriteBudget>,
    connections: Arc<Connections>,
    /// `Bearer <token>` once `AUTH` took a token.
    authorization: Option<HeaderValue>,
    /// Open scans: cursor → the page token of the scan's next page.
    scans: BTreeMap<u64, Bytes>,
    next_cursor: u64,
}

fn ok() -> BytesFrame {
    BytesFrame::SimpleString(Bytes::from_static(b"OK"))
}

fn bulk_or_null(value: Option<Bytes>) -> BytesFrame {
    value.map_or(BytesFrame::Null, BytesFrame::BulkString)
}

/// An error reply: the API's error code, then its message, on one line.
pub fn error(code: &str, message: &str) -> BytesFrame {
    let line: String = format!("{code} {message}")
        .chars()
        .map(|c| if c == '\r' || c == '\n' { ' ' } else { c })
        .collect();
    BytesFrame::Error(line.into())
}

fn api_error(e: ApiError) -> BytesFrame {
    error(e.code.as_str(), &e.message)
}

impl Session {
    pub fn new(
        core: Arc<Core>,
        guard: Arc<Guard>,
        budget: Arc<WriteBudget>,
        connections: Arc<Connections>,
    ) -> Self {
        Session {
            core,
            guard,
            budget,
            connections,
            authorization: None,
            scans: BTreeMap::new(),
            next_cursor: 1,
        }
    }

    fn headers(&self) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Some(value) = &self.authorization {
            headers.insert(header::AUTHORIZATION, value.clone());
        }
        headers
    }

    /// Runs `command`, `frame_bytes` long on the wire, and gives its reply.
    pub async fn run(&mut self, command: Command, frame_bytes: usize) -> Answer {
        match command {
            Command::Ping(None) => BytesFrame::SimpleString(Bytes::from_static(b"PONG")).into(),
            Command::Ping(Some(message)) | Command::Echo(message) => {
                BytesFrame::BulkString(message).into()
            }
            Command::Quit => Answer {
                reply: ok(),
                close: true,
            },
            Command::Introspect => BytesFrame::Array(Vec::new()).into(),
            Command::Auth(token) => self.auth(token).into(),
            Command::Info => self.info().into(),
            Command::Get(_)
            | Command::Exists(_)
            | Command::MGet(_)
            | Command::Scan(_)
            | Command::Set(_)
            | Command::Del(_)
            | Command::MSet(_) => self.keys(command, frame_bytes).await.into(),
        }
    }

    fn auth(&mut self, token: Bytes) -> BytesFrame {
        let Ok(value) =
            HeaderValue::try_from(format!("Bearer {}", String::from_utf8_lossy(&token)))
        else {
            return error("WRONGPASS", "the token is not a valid token");
        };
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, value.clone());
        match self.guard.check(Role::Read, &headers) {
            Ok(()) => {
                self.authorization = Some(value);
                ok()
            }
            Err(e) => error("WRONGPASS", &e.message),
        }
    }

    fn info(&self) -> BytesFrame {
        let status = self.core.peer().status();
        let role = if status.leader_id == status.id {
            "leader"
        } else {
            "follower"
        };
        let text = format!(
            "# Server\r\nserver:strata\r\nstrata_version:{}\r\nnode_id:{}\r\n\r\n# Clients\r\n\
             connected_clients:{}\r\n\r\n# Stats\r\ntotal_connections_received:{}\r\n\
             rejected_connections:{}\r\n\r\n# Replication\r\n\
             raft_role:{role}\r\nraft_term:{}\r\nleader_id:{}\r\ncommit_index:{}\r\napplied_index:{}\r\n",
            env!("CARGO_PKG_VERSION"),
            status.id,
            self.connections.open(),
            self.connections.taken(),
            self.connections.refused(),
            status.term,
            status.leader_id,
            status.commit_index,
            status.applied_index,
        );
        BytesFrame::BulkString(text.into())
    }

    /// A command on keys: checked against the caller's role, then run with
    /// the caller's credential in scope (a follower forwarding a write to
    /// the leader sends it along).
    async fn keys(&mut self, command: Command, frame_bytes: usize) -> BytesFrame {
        let write = matches!(
            command,
            Command::Set(_) | Command::Del(_) | Command::MSet(_)
        );
        let role = if write { Role::Write } else { Role::Read };
        let headers = self.headers();
        if let Err(e) = self.guard.check(role, &headers) {
            return api_error(e);
        }
        let credential = self.authorization.clone();
        let answer = if write {
            self.write(command, frame_bytes, &headers, credential).await
        } else {
            credential::scope(credential, self.read(command)).await
        };
        answer.unwrap_or_else(api_error)
    }

    async fn read(&mut self, command: Command) -> Result<BytesFrame, ApiError> {
        match command {
            Command::Get(key) => Ok(bulk_or_null(self.get(key).await?)),
            Command::MGet(keys) => {
                let mut values = Vec::with_capacity(keys.len());
                for key in keys {
                    values.push(bulk_or_null(self.get(key).await?));
                }
                Ok(BytesFrame::Array(values))
            }
            Command::Exists(keys) => {
                let mut n = 0;
                for key in keys {
                    n += i64::from(self.get(key).await?.is_some());
                }
                Ok(BytesFrame::Integer(n))
            }
            Command::Scan(scan) => self.scan(scan).await,
            _ => unreachable!("only reads come here"),
        }
    }

    async fn get(&self, key: Bytes) -> Result<Option<Bytes>, ApiError> {
        let got = self
            .core
            .get(GetRequest {
                key,
                ..Default::default()
            })
            .await?;
        Ok(got.found.then_some(got.value))
    }

    /// A write, admitted as a REST or gRPC write is (its frame's bytes
    /// charged to the node's budget, held while the storage is behind) and
    /// given the node's request time from when it was read.
    async fn write(
        &self,
        command: Command,
        frame_bytes: usize,
        headers: &HeaderMap,
        credential: Option<HeaderValue>,
    ) -> Result<BytesFrame, ApiError> {
        let apply = self.apply(command);
        crate::tcp_front::write::admitted(
            &self.core,
            &self.budget,
            headers,
            frame_bytes,
            credential,
            apply,
        )
        .await
    }

    async fn apply(&self, command: Command) -> Result<BytesFrame, ApiError> {
        let core = &self.core;
        match command {
            Command::Set(Set {
                key,
                value,
                ttl_ms,
                only_if_absent: false,
            }) => {
                core.put(
                    PutRequest {
                        key,
                        value,
                        ttl_ms: ttl_ms.unwrap_or(0),
                        ..Default::default()
                    },
                    Hop::Client,
                )
                .await?;
                Ok(ok())
            }
            Command::Set(Set {
                ttl_ms: Some(_),
                only_if_absent: true,
                ..
            }) => Err(ApiError::invalid(
                "SET with both NX and EX or PX is not supported here: set the key with NX, or \
                 with a time to live, not both",
            )),
            Command::Set(Set {
                key,
                value,
                only_if_absent: true,
                ..
            }) => {
                let swapped = core
                    .compare_and_swap(
                        CompareAndSwapRequest {
                            key,
                            expected: None,
                            value: Some(value),
                            ..Default::default()
                        },
                        Hop::Client,
                    )
                    .await?;
                Ok(if swapped.succeeded {
                    ok()
                } else {
                    BytesFrame::Null
                })
            }
            Command::Del(keys) => {
                let mut deleted = 0;
                for key in keys {
                    let d = core
                        .delete(
                            DeleteRequest {
                                key,
                                ..Default::default()
                            },
                            Hop::Client,
                        )
                        .await?;
                    deleted += i64::from(d.deleted);
                }
                Ok(BytesFrame::Integer(deleted))
            }
            Command::MSet(pairs) => {
                let ops = pairs
                    .into_iter()
                    .map(|(key, value)| BatchOp {
                        op: Some(batch_op::Op::Put(PutOp {
                            key,
                            value,
                            ..Default::default()
                        })),
                    })
                    .collect();
                core.batch(
                    BatchRequest {
                        ops,
                        ..Default::default()
                    },
                    Hop::Client,
                )
                .await?;
                Ok(ok())
            }
            _ => unreachable!("only writes come here"),
        }
    }

    /// One page of `SCAN`: up to `count` keys (within the pattern's literal
    /// prefix, if it has one), those the pattern matches returned, and a
    /// cursor for the rest (0 at the end). The pages of one scan read the
    /// state its first page read, as REST's and gRPC's pages do.
    async fn scan(&mut self, scan: Scan) -> Result<BytesFrame, ApiError> {
        let pattern = match &scan.pattern {
            Some(p) => Some(Pattern::new(p).map_err(|e| ApiError::invalid(e.to_string()))?),
            None => None,
        };
        let prefix = pattern
            .as_ref()
            .map(Pattern::literal_prefix)
            .unwrap_or_default();
        let page_token = if scan.cursor == 0 {
            Bytes::new()
        } else {
            self.scans
                .remove(&scan.cursor)
                .ok_or_else(|| ApiError::invalid("invalid cursor"))?
        };
        let end = strata_raft::keys::prefix_end(&prefix).unwrap_or_default();
        let limit = scan.count.min(self.core.limits().max_scan_limit);
        let page = self
            .core
            .scan(ScanRequest {
                selector: Some(scan_request::Selector::Range(KeyRange {
                    start: prefix,
                    end: end.into(),
                })),
                limit,
                page_token,
                keys_only: true,
                ..Default::default()
            })
            .await?;
        let cursor = if page.next_page_token.is_empty() {
            0
        } else {
            self.open_scan(page.next_page_token)
        };
        let keys = page
            .kvs
            .into_iter()
            .filter(|kv| pattern.as_ref().is_none_or(|p| p.matches(&kv.key)))
            .map(|kv| BytesFrame::BulkString(kv.key))
            .collect();
        Ok(BytesFrame::Array(vec![
            BytesFrame::BulkString(cursor.to_string().into()),
            BytesFrame::Array(keys),
        ]))
    }

    fn open_scan(&mut self, page_token: Bytes) -> u64 {
        if self.scans.len() >= OPEN_SCANS {
            self.scans.pop_first();
        }
        let cursor = self.next_cursor;
        self.next_cursor += 1;
        self.scans.insert(cursor, page_token);
        cursor
    }
}
