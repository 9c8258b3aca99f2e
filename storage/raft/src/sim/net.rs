//! The simulated network: every message is delayed, and may be dropped,
//! duplicated or reordered by the seeded RNG; links can be cut.

use std::collections::HashSet;

use raft::eraftpb::Message;
use rand::Rng;
use rand::rngs::StdRng;

/// How hostile the network is, in per-message probabilities.
#[derive(Debug, Clone, Copy)]
pub struct Weather {
    pub drop: f64,
    pub duplicate: f64,
    pub max_delay_ms: u64,
}

#[derive(Default)]
pub struct Net {
    in_flight: Vec<(u64, Message)>,
    /// Cut directed links (from, to).
    cut: HashSet<(u64, u64)>,
}

impl Net {
    pub fn send(&mut self, rng: &mut StdRng, now: u64, weather: Weather, m: Message) {
        if self.cut.contains(&(m.from, m.to)) || rng.random_bool(weather.drop) {
            return;
        }
        if rng.random_bool(weather.duplicate) {
            let at = now + rng.random_range(0..=weather.max_delay_ms);
            self.in_flight.push((at, m.clone()));
        }
        let at = now + rng.random_range(0..=weather.max_delay_ms);
        self.in_flight.push((at, m));
    }

    /// Messages due at `now`, in a seeded shuffled order.
    pub fn due(&mut self, rng: &mut StdRng, now: u64) -> Vec<Message> {
        let (mut due, rest): (Vec<_>, Vec<_>) =
            self.in_flight.drain(..).partition(|(at, _)| *at <= now);
        self.in_flight = rest;
        // Fisher-Yates with the seeded RNG: reordering within a millisecond.
        for i in (1..due.len()).rev() {
            let j = rng.random_range(0..=i);
            due.swap(i, j);
        }
        due.into_iter().map(|(_, m)| m).collect()
    }

    /// Cuts both directions between `a` and `b`.
    pub fn partition(&mut self, a: u64, b: u64) {
        self.cut.insert((a, b));
        self.cut.insert((b, a));
    }

    pub fn heal(&mut self) {
        self.cut.clear();
    }

    pub fn is_cut(&self) -> bool {
        !self.cut.is_empty()
    }
}
