//! Consistent pagination: every page of one scan reads the same state.
//!
//! A scan's first page reads a view of the data taken after its read
//! barrier; when more pages remain, the node keeps that view (an engine
//! read point) under a number and names it in the page token, with the key
//! the next page starts at. A later page with that token reads the same
//! view, whatever was written meanwhile. Views are kept on the node that
//! made them until the scan's last page, for a bounded time after each page
//! and in a bounded number: a token that names a view this node no longer has (expired,
//! evicted, made by another node or before a restart) is refused as
//! `PAGE_TOKEN_EXPIRED` (HTTP 410, gRPC `FAILED_PRECONDITION`), and the
//! client starts the scan again.
//!
//! ```text
//! token: version u8 (=1) | life u64 | view u64 | next key (the rest)
//! ```
//! `life` is drawn at random when the process starts, so a token from
//! another process never names a view of this one.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use parking_lot::Mutex;
use strata_engine::ReadPoint;

use crate::error::{ApiError, ErrorCode};

const VERSION: u8 = 1;
const HEADER_BYTES: usize = 1 + 8 + 8;

/// How long a view is kept after the page that last read it.
pub const VIEW_IDLE_TTL: Duration = Duration::from_secs(60);
/// At most this many views are kept; the least recently read goes first.
pub const MAX_VIEWS: usize = 256;

/// What a page token carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageToken {
    life: u64,
    view: u64,
    /// The smallest key the next page may return.
    pub next: Bytes,
}

impl PageToken {
    pub fn encode(&self) -> Bytes {
        let mut out = BytesMut::with_capacity(HEADER_BYTES + self.next.len());
        out.put_u8(VERSION);
        out.put_u64_le(self.life);
        out.put_u64_le(self.view);
        out.put_slice(&self.next);
        out.freeze()
    }

    /// The number of the view the token's pages are read from.
    pub fn view(&self) -> u64 {
        self.view
    }

    /// A token this server issued, or `INVALID_ARGUMENT`.
    pub fn decode(b: &[u8]) -> Result<PageToken, ApiError> {
        let not_ours = || ApiError::invalid("page_token is not a token this server issued");
        if b.len() < HEADER_BYTES || b[0] != VERSION {
            return Err(not_ours());
        }
        let u64_at = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"));
        Ok(PageToken {
            life: u64_at(1),
            view: u64_at(9),
            next: Bytes::copy_from_slice(&b[HEADER_BYTES..]),
        })
    }
}

struct Kept {
    view: Arc<ReadPoint>,
    /// The read index the first page was served at, which every page reports.
    index: u64,
    last_read: Instant,
}

/// The views this node keeps for scans that have more pages to come.
pub struct ScanViews {
    life: u64,
    next_id: AtomicU64,
    kept: Mutex<HashMap<u64, Kept>>,
    idle_ttl: Duration,
    max: usize,
}

impl Default for ScanViews {
    fn default() -> Self {
        ScanViews::new(VIEW_IDLE_TTL, MAX_VIEWS)
    }
}

impl ScanViews {
    pub fn new(idle_ttl: Duration, max: usize) -> Self {
        ScanViews {
            life: rand::random(),
            next_id: AtomicU64::new(1),
            kept: Mutex::new(HashMap::new()),
            idle_ttl,
            max,
        }
    }

    /// Keeps `view` (read at `index`) for the pages after the first;
    /// answers its number.
    pub fn open(&self, view: Arc<ReadPoint>, index: u64) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let now = Instant::now();
        let mut kept = self.kept.lock();
        kept.retain(|_, k| now.duration_since(k.last_read) < self.idle_ttl);
        while kept.len() >= self.max {
            let oldest = kept
                .iter()
                .min_by_key(|(_, k)| k.last_read)
                .map(|(&id, _)| id);
            match oldest {
                Some(id) => kept.remove(&id),
                None => break,
            };
        }
        kept.insert(
            id,
            Kept {
                view,
                index,
                last_read: now,
            },
        );
        id
    }

    /// The token of the page of view `id` that starts at `next`.
    pub fn token(&self, id: u64, next: Bytes) -> PageToken {
        PageToken {
            life: self.life,
            view: id,
            next,
        }
    }

    /// The view `token` names and its read index; reading it restarts its
    /// idle time. The same token read twice (a client retrying a page)
    /// gives the same page. A view this node does not keep is
    /// `PAGE_TOKEN_EXPIRED`.
    pub fn get(&self, token: &PageToken) -> Result<(Arc<ReadPoint>, u64), ApiError> {
        let expired = || {
            ApiError::new(
                ErrorCode::PageTokenExpired,
                format!(
                    "the state this scan's pages are read from is no longer kept (it is kept \
                     on the node that served the first page, for {} s after each page, until \
                     the last page): start the scan again",
                    self.idle_ttl.as_secs()
                ),
            )
        };
        if token.life != self.life {
            return Err(expired());
        }
        let mut kept = self.kept.lock();
        let k = kept.get_mut(&token.view).ok_or_else(expired)?;
        let now = Instant::now();
        if now.duration_since(k.last_read) >= self.idle_ttl {
            kept.remove(&token.view);
            return Err(expired());
        }
        k.last_read = now;
        Ok((Arc::clone(&k.view), k.index))
    }

    /// The scan of view `id` served its last page: the view goes.
    pub fn release(&self, id: u64) {
        self.kept.lock().remove(&id);
    }

    /// How many views are kept now.
    pub fn len(&self) -> usize {
        self.kept.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_engine::{Engine, Options};

    fn engine() -> (tempfile::TempDir, Arc<Engine>) {
        let dir = tempfile::tempdir().unwrap();
        let e = Arc::new(Engine::open(dir.path(), Options::default()).unwrap());
        (dir, e)
    }

    #[test]
    fn a_token_round_trips_and_anything_else_is_refused() {
        let t = PageToken {
            life: 7,
            view: 9,
            next: Bytes::from_static(b"k\x00"),
        };
        assert_eq!(PageToken::decode(&t.encode()).unwrap(), t);
        for bad in [&b""[..], b"k\x00", &[2u8; 20][..], &[1u8; 16][..]] {
            let e = PageToken::decode(bad).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidArgument, "{bad:?}");
        }
    }

    #[test]
    fn a_kept_view_is_read_until_released_and_a_foreign_or_idle_token_is_expired() {
        let (_dir, e) = engine();
        let views = ScanViews::new(Duration::from_millis(50), 4);
        let id = views.open(Arc::new(e.read_point()), 12);
        let token = views.token(id, Bytes::from_static(b"b"));
        assert_eq!(views.get(&token).unwrap().1, 12);
        assert_eq!(
            views.get(&token).unwrap().1,
            12,
            "a retried page reads it again"
        );
        views.release(id);
        assert_eq!(
            views.get(&token).unwrap_err().code,
            ErrorCode::PageTokenExpired,
            "released after the last page"
        );
        let other = ScanViews::default();
        let foreign = other.token(other.open(Arc::new(e.read_point()), 1), Bytes::new());
        assert_eq!(
            views.get(&foreign).unwrap_err().code,
            ErrorCode::PageTokenExpired,
            "another process's token"
        );
        let idle = views.token(views.open(Arc::new(e.read_point()), 3), Bytes::new());
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(
            views.get(&idle).unwrap_err().code,
            ErrorCode::PageTokenExpired,
            "kept past its idle time"
        );
        assert!(views.is_empty());
    }

    #[test]
    fn the_least_recently_read_view_goes_first_when_full() {
        let (_dir, e) = engine();
        let views = ScanViews::new(Duration::from_secs(60), 2);
        let first = views.token(views.open(Arc::new(e.read_point()), 1), Bytes::new());
        let second = views.token(views.open(Arc::new(e.read_point()), 2), Bytes::new());
        views.get(&first).unwrap();
        let third = views.token(views.open(Arc::new(e.read_point()), 3), Bytes::new());
        assert_eq!(views.len(), 2);
        assert_eq!(
            views.get(&second).unwrap_err().code,
            ErrorCode::PageTokenExpired,
            "the least recently read"
        );
        assert_eq!(views.get(&first).unwrap().1, 1);
        assert_eq!(views.get(&third).unwrap().1, 3);
    }
}
