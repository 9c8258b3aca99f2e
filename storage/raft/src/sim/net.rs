//! The simulated network: every message is delayed, and may be dropped,
//! duplicated or reordered by the seeded RNG; links can be cut. A snapshot
//! travels with its files, like the real transport's stream, and is never
//! duplicated (a stream either arrives once or fails).

use std::collections::HashSet;

use raft::eraftpb::Message;
use rand::Rng;
use rand::rngs::StdRng;

use super::transport::Payload;
use crate::stamp::Stamp;

/// How hostile the network is, in per-message probabilities.
#[derive(Debug, Clone, Copy)]
pub struct Weather {
    pub drop: f64,
    pub duplicate: f64,
    pub max_delay_ms: u64,
}

/// A message on the wire; `snapshot` holds the files of a `MsgSnapshot`.
pub struct Envelope {
    pub message: Message,
    /// The stamp of the batch the real transport would carry it in.
    pub stamp: Stamp,
    pub snapshot: Option<Payload>,
}

/// Which messages a test holds back.
pub type HoldFilter = Box<dyn Fn(&Message) -> bool>;

#[derive(Default)]
pub struct Net {
    in_flight: Vec<(u64, Envelope)>,
    /// Cut directed links (from, to).
    cut: HashSet<(u64, u64)>,
    /// Messages a test holds back (a link so slow that what it carries
    /// arrives after the sender or the receiver has moved on), and which.
    held: Vec<Envelope>,
    hold: Option<HoldFilter>,
}

impl Net {
    /// Puts `e` on the wire; returns it if the network lost it at once, so
    /// that the sender of a snapshot can be told.
    pub fn send(
        &mut self,
        rng: &mut StdRng,
        now: u64,
        weather: Weather,
        e: Envelope,
    ) -> Option<Envelope> {
        let link = (e.message.from, e.message.to);
        if self.cut.contains(&link) || rng.random_bool(weather.drop) {
            return Some(e);
        }
        if self.hold.as_ref().is_some_and(|hold| hold(&e.message)) {
            self.held.push(e);
            return None;
        }
        if e.snapshot.is_none() && rng.random_bool(weather.duplicate) {
            let at = now + rng.random_range(0..=weather.max_delay_ms);
            let copy = Envelope {
                message: e.message.clone(),
                stamp: e.stamp,
                snapshot: None,
            };
            self.in_flight.push((at, copy));
        }
        let at = now + rng.random_range(0..=weather.max_delay_ms);
        self.in_flight.push((at, e));
        None
    }

    /// Envelopes due at `now`, in a seeded shuffled order.
    pub fn due(&mut self, rng: &mut StdRng, now: u64) -> Vec<Envelope> {
        let (mut due, rest): (Vec<_>, Vec<_>) =
            self.in_flight.drain(..).partition(|(at, _)| *at <= now);
        self.in_flight = rest;
        // Fisher-Yates with the seeded RNG: reordering within a millisecond.
        for i in (1..due.len()).rev() {
            let j = rng.random_range(0..=i);
            due.swap(i, j);
        }
        due.into_iter().map(|(_, e)| e).collect()
    }

    /// Puts `e` back to be delivered at `at`, as it is: it already
    /// crossed the network.
    pub fn deliver_at(&mut self, at: u64, e: Envelope) {
        self.in_flight.push((at, e));
    }

    /// Cuts both directions between `a` and `b`.
    pub fn partition(&mut self, a: u64, b: u64) {
        self.cut.insert((a, b));
        self.cut.insert((b, a));
    }

    /// Holds back every message `filter` picks from now on, until
    /// released; `None` stops holding (what is held stays held).
    pub fn hold(&mut self, filter: Option<HoldFilter>) {
        self.hold = filter;
    }

    /// Puts the held messages `which` picks back on the wire, due at `at`,
    /// in the order they were sent.
    pub fn release(&mut self, at: u64, which: impl Fn(&Message) -> bool) {
        let (go, stay): (Vec<_>, Vec<_>) = self.held.drain(..).partition(|e| which(&e.message));
        self.held = stay;
        self.in_flight.extend(go.into_iter().map(|e| (at, e)));
    }

    /// The messages held back so far.
    pub fn held(&self) -> impl Iterator<Item = &Message> {
        self.held.iter().map(|e| &e.message)
    }

    pub fn heal(&mut self) {
        self.cut.clear();
    }

    pub fn is_cut(&self) -> bool {
        !self.cut.is_empty()
    }
}
