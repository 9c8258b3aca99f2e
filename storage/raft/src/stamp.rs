//! What every batch of raft messages says about its sender and what the
//! sender knows of its receiver, beside the messages themselves: the
//! sender's incarnation and whether it is proven (see [`crate::identity`]),
//! the receiver's incarnation as the sender last saw it, and whether the
//! sender, leading, vouches for the receiver. The transport puts a
//! [`Stamp`] on each batch it sends ([`Stamps::to`]) and hands the one it
//! receives to the peer with the messages.

use std::collections::{BTreeMap, BTreeSet};

use parking_lot::RwLock;

/// One batch's stamp. All zero (the default) is a batch that says
/// nothing: its sender is unknown, so it neither reveals a new life nor
/// vouches for anyone.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stamp {
    /// The sender's incarnation; 0 for unknown.
    pub incarnation: u64,
    /// The sender holds everything it acknowledged in any earlier life.
    pub proven: bool,
    /// The receiver's incarnation as the sender last saw it; 0 for none.
    pub to_incarnation: u64,
    /// The sender leads and vouches that the receiver, in the life
    /// `to_incarnation` names, holds its log up to an entry committed after
    /// it first heard from that life.
    pub vouched: bool,
    /// The sender's cluster id (`state_machine/cluster_id.rs`); 0 while
    /// it knows none. A member never steps a batch from another cluster.
    pub cluster_id: u64,
}

/// What a peer's driver publishes for its transport to stamp batches
/// with: its own incarnation and standing, and what it knows of others.
#[derive(Debug)]
pub struct Stamps {
    incarnation: u64,
    inner: RwLock<Known>,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Known {
    pub(crate) proven: bool,
    /// The incarnation last seen from each member.
    pub(crate) incarnations: BTreeMap<u64, u64>,
    /// The members this peer, leading, vouches for.
    pub(crate) vouched: BTreeSet<u64>,
}

impl Stamps {
    pub(crate) fn new(incarnation: u64, proven: bool) -> Self {
        Stamps {
            incarnation,
            inner: RwLock::new(Known {
                proven,
                ..Known::default()
            }),
        }
    }

    /// The stamp for a batch to member `to`.
    pub fn to(&self, to: u64) -> Stamp {
        let known = self.inner.read();
        Stamp {
            incarnation: self.incarnation,
            proven: known.proven,
            to_incarnation: known.incarnations.get(&to).copied().unwrap_or(0),
            vouched: known.vouched.contains(&to),
            cluster_id: 0,
        }
    }

    pub fn incarnation(&self) -> u64 {
        self.incarnation
    }

    /// Replaces what is published, if it changed.
    pub(crate) fn publish(&self, known: &Known) {
        if *self.inner.read() != *known {
            *self.inner.write() = known.clone();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_is_stamped_with_what_was_last_published() {
        let stamps = Stamps::new(7, false);
        assert_eq!(
            stamps.to(2),
            Stamp {
                incarnation: 7,
                ..Stamp::default()
            }
        );
        stamps.publish(&Known {
            proven: true,
            incarnations: BTreeMap::from([(2, 9), (3, 4)]),
            vouched: BTreeSet::from([2]),
        });
        assert_eq!(
            stamps.to(2),
            Stamp {
                incarnation: 7,
                proven: true,
                to_incarnation: 9,
                vouched: true,
                cluster_id: 0,
            }
        );
        assert!(!stamps.to(3).vouched);
        assert_eq!(stamps.to(5).to_incarnation, 0);
    }
}
