//! Watching keys: [`Watcher`] follows `KV/Watch` and, when its stream
//! breaks (a node stopped or was killed, the connection dropped), starts
//! it again from the index after the last one it was sent, on whichever
//! node answers. So its caller sees every change once, in commit order,
//! across any number of breaks, unless the history no longer holds where
//! it stood (COMPACTED), which ends it.

use std::time::Duration;

use strata_proto::v1::kv_client::KvClient;
use strata_proto::v1::{KeyRange, WatchRequest, WatchResponse, watch_request};
use tonic::{Code, Streaming};

use crate::ClientError;

/// Which keys a watch covers.
#[derive(Debug, Clone)]
pub enum WatchSelector {
    All,
    Key(Vec<u8>),
    Prefix(Vec<u8>),
    /// `[start, end)`; an empty end means to the end of the key space.
    Range {
        start: Vec<u8>,
        end: Vec<u8>,
    },
}

impl WatchSelector {
    fn to_proto(&self) -> Option<watch_request::Selector> {
        match self.clone() {
            WatchSelector::All => None,
            WatchSelector::Key(k) => Some(watch_request::Selector::Key(k.into())),
            WatchSelector::Prefix(p) => Some(watch_request::Selector::Prefix(p.into())),
            WatchSelector::Range { start, end } => Some(watch_request::Selector::Range(KeyRange {
                start: start.into(),
                end: end.into(),
            })),
        }
    }
}

/// How long a watcher keeps trying to start its stream again before it
/// gives up, from the first failed try.
const RESUME_LIMIT: Duration = Duration::from_secs(30);
/// The pause between tries, doubling from the first.
const RESUME_PAUSE: Duration = Duration::from_millis(50);
const RESUME_PAUSE_MAX: Duration = Duration::from_secs(1);

/// A watch that resumes itself.
pub struct Watcher {
    kv: KvClient<crate::Transport>,
    selector: WatchSelector,
    progress_ms: u32,
    /// The index the next start asks for (0: from now).
    next_index: u64,
    stream: Option<Streaming<WatchResponse>>,
    /// How many times the stream was started again after a break.
    resumed: u64,
}

impl Watcher {
    pub(crate) fn new(
        kv: KvClient<crate::Transport>,
        selector: WatchSelector,
        from_index: u64,
        progress: Option<Duration>,
    ) -> Self {
        Watcher {
            kv,
            selector,
            progress_ms: progress.map_or(0, |p| p.as_millis().min(u32::MAX.into()) as u32),
            next_index: from_index,
            stream: None,
            resumed: 0,
        }
    }

    /// How many times the stream broke and was started again.
    pub fn resumed(&self) -> u64 {
        self.resumed
    }

    /// The index a resumed stream would start from.
    pub fn next_index(&self) -> u64 {
        self.next_index
    }

    /// Whether a watch that ended with `status` may be started again from
    /// where it stood: not when the request is bad or its start is gone.
    fn resumable(status: &tonic::Status) -> bool {
        !matches!(
            status.code(),
            Code::OutOfRange | Code::InvalidArgument | Code::Unimplemented | Code::NotFound
        )
    }

    async fn open(&mut self) -> Result<Streaming<WatchResponse>, tonic::Status> {
        let req = WatchRequest {
            selector: self.selector.to_proto(),
            from_index: self.next_index,
            progress_interval_ms: self.progress_ms,
        };
        Ok(self.kv.watch(req).await?.into_inner())
    }

    /// The next message: changes (all of one or more raft indexes) or a
    /// progress message with no events. Errors only when the watch cannot
    /// go on: its start is no longer held (OUT_OF_RANGE, COMPACTED), the
    /// request is bad, or no node took it for [`RESUME_LIMIT`].
    pub async fn next(&mut self) -> Result<WatchResponse, ClientError> {
        let mut broken_since = None;
        let mut pause = RESUME_PAUSE;
        loop {
            let failure = match self.stream.as_mut() {
                Some(stream) => match stream.message().await {
                    Ok(Some(m)) => {
                        self.next_index = m.index + 1;
                        return Ok(m);
                    }
                    Ok(None) => tonic::Status::unavailable("the watch stream ended"),
                    Err(status) => status,
                },
                None => match self.open().await {
                    Ok(stream) => {
                        self.stream = Some(stream);
                        continue;
                    }
                    Err(status) => status,
                },
            };
            if self.stream.take().is_some() && broken_since.is_none() {
                self.resumed += 1;
            }
            if !Self::resumable(&failure) {
                return Err(ClientError::Status(failure));
            }
            let since = *broken_since.get_or_insert_with(tokio::time::Instant::now);
            if since.elapsed() > RESUME_LIMIT {
                return Err(ClientError::Status(failure));
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(RESUME_PAUSE_MAX);
        }
    }
}
