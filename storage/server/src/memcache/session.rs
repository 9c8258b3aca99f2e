//! One memcached connection's state and what its requests do: each goes
//! to the same service core as REST and gRPC (`crate::core`), with the
//! same consistency and durability, the same roles and, for writes, the
//! same admission and deadline (`crate::admission`, `crate::deadline`).
//!
//! - A unique (`gets`, `cas`) is the key's mod index: the raft index of
//!   the write that last changed it, the same on every node.
//! - An expiry time puts the key under a lease of that time to live; the
//!   key is deleted, on every node at once, when the lease ends. A store
//!   whose expiry time has already passed deletes the key (memcached keeps
//!   such an item out of sight at once).
//! - The conditional stores (`add` with an expiry time, `replace`, `cas`,
//!   `append`, `prepend`, `incr`, `decr`, `touch`) are transactions that
//!   compare the key as it was read; a store that finds the key changed
//!   since is not applied (and the read-modify-write ones read again).
//! - Flags other than 0 are refused: the node keeps values, not flags.
//! - With no anonymous role that may read, a connection signs in first as
//!   memcached's own text-protocol authentication has it: a `set` (of any
//!   key) whose value is `<user> <token>`, the token one of the cluster's.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::http::{HeaderMap, HeaderValue, header};
use bytes::{BufMut, Bytes, BytesMut};
use strata_auth::Role;
use strata_proto::v1::{
    Compare, CompareAndSwapRequest, CompareOp, DeleteOp, DeleteRequest, GetOp, GetRequest,
    LeaseGrantRequest, LeaseRevokeRequest, PutOp, PutRequest, TxnOp, TxnRequest, compare, txn_op,
    txn_op_result,
};

use super::codec::{Request, Store, StoreMode};
use super::counters::{Counters, bump};
use crate::admission::WriteBudget;
use crate::auth::{Guard, credential};
use crate::core::{Core, Hop};
use crate::error::{ApiError, ErrorCode};

/// memcached's bound between an expiry time in seconds from now and one
/// that is a unix time.
const RELATIVE_EXPTIME_MAX: i64 = 60 * 60 * 24 * 30;
/// How often a read-modify-write (`append`, `incr`, `touch`, …) reads
/// again after the key changed under it, before it gives up.
const RMW_ATTEMPTS: usize = 16;

/// What a request answered (nothing for `noreply`), and whether the
/// connection ends after it.
pub struct Answer {
    pub reply: Option<Bytes>,
    pub close: bool,
}

fn line(text: &str) -> Bytes {
    let mut out = BytesMut::with_capacity(text.len() + 2);
    out.put_slice(text.as_bytes());
    out.put_slice(b"\r\n");
    out.freeze()
}

/// An error line for an API failure: the client's mistakes as
/// `CLIENT_ERROR`, the rest as `SERVER_ERROR`, each with the API's code,
/// so a client tells "not applied" (UNAVAILABLE, OVERLOADED) from
/// "outcome unknown" (OUTCOME_UNKNOWN) as over REST and gRPC.
pub fn api_error(e: &ApiError) -> String {
    let kind = match e.code {
        ErrorCode::Unavailable
        | ErrorCode::Overloaded
        | ErrorCode::OutcomeUnknown
        | ErrorCode::StorageFull
        | ErrorCode::StorageFailed
        | ErrorCode::Internal => "SERVER_ERROR",
        _ => "CLIENT_ERROR",
    };
    let message: String = e
        .message
        .chars()
        .map(|c| if c == '\r' || c == '\n' { ' ' } else { c })
        .collect();
    format!("{kind} {} {message}", e.code.as_str())
}

/// A store's condition on the key as it is when the store applies.
#[derive(Clone, Copy)]
enum Condition {
    Absent,
    Present,
    /// Present, and last changed by the write at this index.
    Unchanged(u64),
}

impl Condition {
    fn compares(self, key: &Bytes) -> Vec<Compare> {
        let on = |target| Compare {
            key: key.clone(),
            op: CompareOp::Equal as i32,
            target: Some(target),
        };
        match self {
            Condition::Absent => vec![on(compare::Target::Exists(false))],
            Condition::Present => vec![on(compare::Target::Exists(true))],
            Condition::Unchanged(index) => vec![
                on(compare::Target::Exists(true)),
                on(compare::Target::ModIndex(index)),
            ],
        }
    }
}

/// How a conditional store ended.
enum Stored {
    Yes,
    /// The condition did not hold; whether the key existed then.
    No {
        exists: bool,
    },
}

/// A key as read: its value, mod index and lease.
struct Found {
    value: Bytes,
    mod_index: u64,
    lease: u64,
}

/// When an item expires, as memcached reads `exptime`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expiry {
    Never,
    /// After this many milliseconds (a lease of that time to live).
    In(u64),
    /// Already: the item is stored as memcached stores it, gone at once
    /// (a store that would make it is a delete).
    Passed,
}

/// `exptime`: 0 never expires; up to 30 days, seconds from now; beyond, a
/// unix time; negative, or a time gone by, already expired.
fn expiry(exptime: i64) -> Expiry {
    match exptime {
        0 => Expiry::Never,
        e if e < 0 => Expiry::Passed,
        e if e <= RELATIVE_EXPTIME_MAX => Expiry::In(e as u64 * 1000),
        e => {
            let now_ms = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as i64);
            let left = e.saturating_mul(1000) - now_ms;
            // A lease lives at least a second.
            if left > 0 {
                Expiry::In(left.max(1000) as u64)
            } else {
                Expiry::Passed
            }
        }
    }
}

pub struct Session {
    core: Arc<Core>,
    guard: Arc<Guard>,
    budget: Arc<WriteBudget>,
    counters: Arc<Counters>,
    /// `Bearer <token>` once the connection signed in.
    authorization: Option<HeaderValue>,
}

impl Session {
    pub fn new(
        core: Arc<Core>,
        guard: Arc<Guard>,
        budget: Arc<WriteBudget>,
        counters: Arc<Counters>,
    ) -> Self {
        Session {
            core,
            guard,
            budget,
            counters,
            authorization: None,
        }
    }

    fn headers(&self) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Some(value) = &self.authorization {
            headers.insert(header::AUTHORIZATION, value.clone());
        }
        headers
    }

    /// Whether the connection must sign in before anything else: it holds
    /// no token, and a request without one may not even read.
    fn must_sign_in(&self) -> bool {
        self.authorization.is_none() && self.guard.check(Role::Read, &HeaderMap::new()).is_err()
    }

    /// Runs `request`, `request_bytes` long on the wire, and gives its reply.
    pub async fn run(&mut self, request: Request, request_bytes: usize) -> Answer {
        let noreply = match &request {
            Request::Store(s) => s.noreply,
            Request::Delete { noreply, .. }
            | Request::Arith { noreply, .. }
            | Request::Touch { noreply, .. }
            | Request::Verbosity { noreply }
            | Request::FlushAll { noreply } => *noreply,
            _ => false,
        };
        let reply = match request {
            Request::Quit => {
                return Answer {
                    reply: None,
                    close: true,
                };
            }
            Request::Version => line(&format!("VERSION {}", env!("CARGO_PKG_VERSION"))),
            Request::Store(store) if self.must_sign_in() && store.mode == StoreMode::Set => {
                self.sign_in(&store.data)
            }
            _ if self.must_sign_in() => line("CLIENT_ERROR unauthenticated"),
            Request::Verbosity { .. } => line("OK"),
            Request::FlushAll { .. } => line(
                "CLIENT_ERROR METHOD_NOT_ALLOWED flush_all is not served: it would delete every \
                 key of the cluster, which a store of record does not do on a cache's command (delete \
                 keys one by one)",
            ),
            Request::Stats(None) => self.stats(),
            Request::Stats(Some(group)) => line(&format!(
                "CLIENT_ERROR stats {group} is not kept here: `stats` gives what is"
            )),
            Request::Get { keys, cas } => self.get(keys, cas).await,
            write => self.write(write, request_bytes).await,
        };
        Answer {
            reply: (!noreply).then_some(reply),
            close: false,
        }
    }

    /// memcached's text-protocol sign-in: the value of a `set` is
    /// `<user> <token>`; the user is not checked, the token is.
    fn sign_in(&mut self, data: &[u8]) -> Bytes {
        let text = String::from_utf8_lossy(data);
        let token = text
            .trim_end()
            .split_once(' ')
            .map_or("", |(_user, token)| token.trim());
        let Ok(value) = HeaderValue::try_from(format!("Bearer {token}")) else {
            return line("CLIENT_ERROR authentication failure");
        };
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, value.clone());
        match self.guard.check(Role::Read, &headers) {
            Ok(()) if !token.is_empty() => {
                self.authorization = Some(value);
                line("STORED")
            }
            _ => line("CLIENT_ERROR authentication failure"),
        }
    }

    fn stats(&self) -> Bytes {
        let status = self.core.peer().status();
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let role = if status.leader_id == status.id {
            "leader"
        } else {
            "follower"
        };
        let mut out = BytesMut::new();
        let mut stat = |name: &str, value: &dyn std::fmt::Display| {
            out.put_slice(format!("STAT {name} {value}\r\n").as_bytes());
        };
        stat("pid", &std::process::id());
        stat("time", &now);
        stat("version", &env!("CARGO_PKG_VERSION"));
        for (name, value) in self.counters.named() {
            stat(name, &value);
        }
        stat("strata_node_id", &status.id);
        stat("strata_raft_role", &role);
        stat("strata_raft_term", &status.term);
        stat("strata_leader_id", &status.leader_id);
        stat("strata_applied_index", &status.applied_index);
        out.put_slice(b"END\r\n");
        out.freeze()
    }

    /// `get` / `gets`: each key read linearizably, one after the other.
    async fn get(&mut self, keys: Vec<Bytes>, cas: bool) -> Bytes {
        let headers = self.headers();
        if let Err(e) = self.guard.check(Role::Read, &headers) {
            return line(&api_error(&e));
        }
        let read = async {
            let mut out = BytesMut::new();
            for key in keys {
                bump(&self.counters.cmd_get);
                let Some(found) = self.read(&key).await? else {
                    bump(&self.counters.get_misses);
                    continue;
                };
                bump(&self.counters.get_hits);
                out.put_slice(b"VALUE ");
                out.put_slice(&key);
                let len = found.value.len();
                let head = if cas {
                    format!(" 0 {len} {}\r\n", found.mod_index)
                } else {
                    format!(" 0 {len}\r\n")
                };
                out.put_slice(head.as_bytes());
                out.put_slice(&found.value);
                out.put_slice(b"\r\n");
            }
            out.put_slice(b"END\r\n");
            Ok::<_, ApiError>(out.freeze())
        };
        credential::scope(self.authorization.clone(), read)
            .await
            .unwrap_or_else(|e| line(&api_error(&e)))
    }

    async fn read(&self, key: &Bytes) -> Result<Option<Found>, ApiError> {
        let got = self
            .core
            .get(GetRequest {
                key: key.clone(),
                ..Default::default()
            })
            .await?;
        Ok(got.found.then_some(Found {
            value: got.value,
            mod_index: got.mod_index,
            lease: got.lease,
        }))
    }

    /// A write, admitted as a REST or gRPC write is (its bytes charged to
    /// the node's budget, held while the storage is behind) and given the
    /// node's request time from when it was read.
    async fn write(&mut self, request: Request, request_bytes: usize) -> Bytes {
        let headers = self.headers();
        if let Err(e) = self.guard.check(Role::Write, &headers) {
            return line(&api_error(&e));
        }
        let answer = crate::tcp_front::write::admitted(
            &self.core,
            &self.budget,
            &headers,
            request_bytes,
            self.authorization.clone(),
            self.apply(request),
        );
        match answer.await {
            Ok(reply) => reply,
            Err(e) => line(&api_error(&e)),
        }
    }

    async fn apply(&self, request: Request) -> Result<Bytes, ApiError> {
        match request {
            Request::Store(store) => self.store(store).await,
            Request::Delete { key, .. } => {
                let deleted = self
                    .core
                    .delete(
                        DeleteRequest {
                            key,
                            ..Default::default()
                        },
                        Hop::Client,
                    )
                    .await?
                    .deleted;
                Ok(if deleted {
                    bump(&self.counters.delete_hits);
                    line("DELETED")
                } else {
                    bump(&self.counters.delete_misses);
                    line("NOT_FOUND")
                })
            }
            Request::Arith { key, delta, up, .. } => self.arith(key, delta, up).await,
            Request::Touch { key, exptime, .. } => self.touch(key, exptime).await,
            _ => unreachable!("only writes come here"),
        }
    }

    async fn store(&self, store: Store) -> Result<Bytes, ApiError> {
        bump(&self.counters.cmd_set);
        if store.flags != 0 {
            return Err(ApiError::invalid(format!(
                "flags {} are not kept: the node stores values only, so every item is stored and \
                 read with flags 0",
                store.flags
            )));
        }
        let expiry = expiry(store.exptime);
        let Store {
            mode, key, data, ..
        } = store;
        let outcome = match mode {
            StoreMode::Set if expiry == Expiry::Passed => {
                self.core
                    .delete(
                        DeleteRequest {
                            key,
                            ..Default::default()
                        },
                        Hop::Client,
                    )
                    .await?;
                Stored::Yes
            }
            StoreMode::Set => {
                let ttl_ms = match expiry {
                    Expiry::In(ms) => ms,
                    _ => 0,
                };
                self.core
                    .put(
                        PutRequest {
                            key,
                            value: data,
                            ttl_ms,
                            ..Default::default()
                        },
                        Hop::Client,
                    )
                    .await?;
                Stored::Yes
            }
            StoreMode::Add if expiry == Expiry::Never => {
                let swapped = self
                    .core
                    .compare_and_swap(
                        CompareAndSwapRequest {
                            key,
                            expected: None,
                            value: Some(data),
                            ..Default::default()
                        },
                        Hop::Client,
                    )
                    .await?;
                if swapped.succeeded {
                    Stored::Yes
                } else {
                    Stored::No { exists: true }
                }
            }
            StoreMode::Add => {
                self.store_if(key, data, Condition::Absent, expiry, 0)
                    .await?
            }
            StoreMode::Replace => {
                self.store_if(key, data, Condition::Present, expiry, 0)
                    .await?
            }
            StoreMode::Cas(unique) => {
                let stored = self
                    .store_if(key, data, Condition::Unchanged(unique), expiry, 0)
                    .await?;
                return Ok(match stored {
                    Stored::Yes => {
                        bump(&self.counters.cas_hits);
                        line("STORED")
                    }
                    Stored::No { exists: true } => {
                        bump(&self.counters.cas_badval);
                        line("EXISTS")
                    }
                    Stored::No { exists: false } => {
                        bump(&self.counters.cas_misses);
                        line("NOT_FOUND")
                    }
                });
            }
            StoreMode::Append | StoreMode::Prepend => {
                let append = mode == StoreMode::Append;
                let changed = self
                    .read_modify_write(&key, |found| {
                        let mut value = BytesMut::with_capacity(found.value.len() + data.len());
                        if append {
                            value.put_slice(&found.value);
                            value.put_slice(&data);
                        } else {
                            value.put_slice(&data);
                            value.put_slice(&found.value);
                        }
                        Ok((value.freeze(), Keep::Lease))
                    })
                    .await?;
                match changed {
                    Some(_) => Stored::Yes,
                    None => Stored::No { exists: false },
                }
            }
        };
        Ok(match outcome {
            Stored::Yes => line("STORED"),
            Stored::No { .. } => line("NOT_STORED"),
        })
    }

    async fn arith(&self, key: Bytes, delta: u64, up: bool) -> Result<Bytes, ApiError> {
        let changed = self
            .read_modify_write(&key, |found| {
                let current = std::str::from_utf8(&found.value)
                    .ok()
                    .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
                    .and_then(|s| s.parse::<u64>().ok())
                    .ok_or_else(|| {
                        ApiError::invalid("cannot increment or decrement non-numeric value")
                    })?;
                let next = if up {
                    current.wrapping_add(delta)
                } else {
                    current.saturating_sub(delta)
                };
                Ok((Bytes::from(next.to_string()), Keep::Lease))
            })
            .await?;
        let (hits, misses) = if up {
            (&self.counters.incr_hits, &self.counters.incr_misses)
        } else {
            (&self.counters.decr_hits, &self.counters.decr_misses)
        };
        Ok(match changed {
            Some(value) => {
                bump(hits);
                line(&String::from_utf8_lossy(&value))
            }
            None => {
                bump(misses);
                line("NOT_FOUND")
            }
        })
    }

    async fn touch(&self, key: Bytes, exptime: i64) -> Result<Bytes, ApiError> {
        bump(&self.counters.cmd_touch);
        let expiry = expiry(exptime);
        let changed = self
            .read_modify_write(&key, |found| {
                Ok((found.value.clone(), Keep::Expiry(expiry)))
            })
            .await?;
        Ok(match changed {
            Some(_) => {
                bump(&self.counters.touch_hits);
                line("TOUCHED")
            }
            None => {
                bump(&self.counters.touch_misses);
                line("NOT_FOUND")
            }
        })
    }

    /// Reads `key` and stores `change` of it, if the key did not change in
    /// between (else reads again, up to `RMW_ATTEMPTS` times). The value
    /// stored, or `None` when the key does not exist.
    async fn read_modify_write(
        &self,
        key: &Bytes,
        change: impl Fn(&Found) -> Result<(Bytes, Keep), ApiError>,
    ) -> Result<Option<Bytes>, ApiError> {
        for _ in 0..RMW_ATTEMPTS {
            let Some(found) = self.read(key).await? else {
                return Ok(None);
            };
            let (value, keep) = change(&found)?;
            let (expiry, lease) = match keep {
                Keep::Lease => (Expiry::Never, found.lease),
                Keep::Expiry(expiry) => (expiry, 0),
            };
            let stored = self
                .store_if(
                    key.clone(),
                    value.clone(),
                    Condition::Unchanged(found.mod_index),
                    expiry,
                    lease,
                )
                .await;
            let stored = match stored {
                // The key's lease ended since the read, and the key with
                // it: the item expired.
                Err(e) if e.code == ErrorCode::NotFound && lease != 0 => return Ok(None),
                other => other?,
            };
            match stored {
                Stored::Yes => return Ok(Some(value)),
                Stored::No { exists: false } => return Ok(None),
                Stored::No { exists: true } => continue,
            }
        }
        Err(ApiError::new(
            ErrorCode::Unavailable,
            format!(
                "the key changed under each of {RMW_ATTEMPTS} attempts to change it; not applied"
            ),
        ))
    }

    /// Stores `value` at `key` if `condition` holds when the store applies:
    /// under a new lease for an expiry time, under `lease` (0: none) for
    /// none; one already expired deletes the key instead.
    async fn store_if(
        &self,
        key: Bytes,
        value: Bytes,
        condition: Condition,
        expiry: Expiry,
        lease: u64,
    ) -> Result<Stored, ApiError> {
        let lease = match expiry {
            Expiry::In(ttl_ms) => {
                self.core
                    .lease_grant(
                        LeaseGrantRequest {
                            ttl_ms,
                            ..Default::default()
                        },
                        Hop::Client,
                    )
                    .await?
                    .id
            }
            Expiry::Never => lease,
            Expiry::Passed => 0,
        };
        let op = match expiry {
            Expiry::Passed => txn_op::Op::Delete(DeleteOp { key: key.clone() }),
            _ => txn_op::Op::Put(PutOp {
                key: key.clone(),
                value,
                lease,
            }),
        };
        let txn = self
            .core
            .txn(
                TxnRequest {
                    compare: condition.compares(&key),
                    success: vec![TxnOp { op: Some(op) }],
                    failure: vec![TxnOp {
                        op: Some(txn_op::Op::Get(GetOp { key })),
                    }],
                    ..Default::default()
                },
                Hop::Client,
            )
            .await?;
        if txn.succeeded {
            return Ok(Stored::Yes);
        }
        if matches!(expiry, Expiry::In(_)) {
            // The lease holds nothing; it would end by itself, this is sooner.
            let revoked = self
                .core
                .lease_revoke(
                    LeaseRevokeRequest {
                        id: lease,
                        ..Default::default()
                    },
                    Hop::Client,
                )
                .await;
            if let Err(e) = revoked {
                tracing::debug!(lease, error = %e, "revoking an unused lease failed");
            }
        }
        let exists = txn
            .results
            .iter()
            .any(|r| matches!(&r.result, Some(txn_op_result::Result::Get(got)) if got.found));
        Ok(Stored::No { exists })
    }
}

/// What a read-modify-write keeps of the key's expiry.
enum Keep {
    /// Its lease, so its expiry time.
    Lease,
    /// A new expiry time.
    Expiry(Expiry),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exptime_is_seconds_up_to_thirty_days_then_a_unix_time() {
        // Proves memcached's reading of exptime: 0 never expires, up to 30
        // days counts from now, beyond is a unix time (now + 1 h → about
        // an hour), and a negative one or a time gone by has expired.
        assert_eq!(expiry(0), Expiry::Never);
        assert_eq!(expiry(60), Expiry::In(60_000));
        assert_eq!(
            expiry(RELATIVE_EXPTIME_MAX),
            Expiry::In(RELATIVE_EXPTIME_MAX as u64 * 1000)
        );
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        let Expiry::In(hour) = expiry(now + 3600) else {
            panic!("an hour ahead expires in about an hour");
        };
        assert!((3_590_000..=3_600_000).contains(&hour), "{hour}");
        assert_eq!(expiry(-1), Expiry::Passed);
        assert_eq!(expiry(now - 10), Expiry::Passed);
    }

    #[test]
    fn errors_say_whose_fault_and_keep_the_api_code() {
        // Proves: a client's mistake is a CLIENT_ERROR, a write that may
        // have applied a SERVER_ERROR naming OUTCOME_UNKNOWN, one that did
        // not UNAVAILABLE; a message stays on one line.
        let bad = ApiError::invalid("key\r\ntoo long");
        assert_eq!(
            api_error(&bad),
            "CLIENT_ERROR INVALID_ARGUMENT key  too long"
        );
        let unknown = ApiError::new(ErrorCode::OutcomeUnknown, "timed out");
        assert_eq!(
            api_error(&unknown),
            "SERVER_ERROR OUTCOME_UNKNOWN timed out"
        );
        let not_applied = ApiError::new(ErrorCode::Unavailable, "no leader");
        assert!(api_error(&not_applied).starts_with("SERVER_ERROR UNAVAILABLE"));
    }
}
