//! Contexts of ReadIndex requests. raft-rs names a request by its context
//! alone: the leader keeps one pending request per context and drops a
//! second one whose context is already pending, and a member takes any
//! answer carrying a context for the request it made with it. So no two
//! requests anywhere in the group, at any time, may share a context: one
//! names the member, the member's life (a random number drawn when it
//! starts, since a restarted member counts from 1 again) and the request's
//! number within that life.

/// The length of a context: member id, life and number, each a `u64`
/// (little-endian).
const CONTEXT_BYTES: usize = 24;

/// Makes the contexts of one member's ReadIndex requests during one life.
pub(super) struct ReadIds {
    member: u64,
    life: u64,
    next: u64,
}

impl ReadIds {
    /// The contexts of member `member` for a life that starts now.
    pub(super) fn new(member: u64) -> Self {
        ReadIds::for_life(member, rand::random())
    }

    fn for_life(member: u64, life: u64) -> Self {
        ReadIds {
            member,
            life,
            next: 1,
        }
    }

    /// The next request's number and its context.
    pub(super) fn next(&mut self) -> (u64, Vec<u8>) {
        let number = self.next;
        self.next += 1;
        let mut ctx = Vec::with_capacity(CONTEXT_BYTES);
        for part in [self.member, self.life, number] {
            ctx.extend_from_slice(&part.to_le_bytes());
        }
        (number, ctx)
    }

    /// The number of the request this life made with `ctx`; `None` for a
    /// context another member or an earlier life made, or one that is not
    /// a context at all.
    pub(super) fn ours(&self, ctx: &[u8]) -> Option<u64> {
        if ctx.len() != CONTEXT_BYTES {
            return None;
        }
        let part = |i: usize| {
            let bytes: [u8; 8] = ctx[i * 8..(i + 1) * 8].try_into().expect("8 bytes");
            u64::from_le_bytes(bytes)
        };
        (part(0) == self.member && part(1) == self.life).then(|| part(2))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves that members, lives and requests each make distinct contexts,
    // and that a life recognises only its own.
    #[test]
    fn contexts_differ_across_members_lives_and_requests() {
        let mut first_life = ReadIds::for_life(2, 7);
        let mut other_member = ReadIds::for_life(3, 7);
        let mut second_life = ReadIds::for_life(2, 8);
        let (n1, a) = first_life.next();
        let (n2, b) = first_life.next();
        let (m1, c) = other_member.next();
        let (l1, d) = second_life.next();
        assert_eq!((n1, n2, m1, l1), (1, 2, 1, 1));
        let all = [&a, &b, &c, &d];
        for (i, x) in all.iter().enumerate() {
            for y in &all[i + 1..] {
                assert_ne!(x, y);
            }
        }
        assert_eq!(first_life.ours(&a), Some(1));
        assert_eq!(first_life.ours(&b), Some(2));
        assert_eq!(first_life.ours(&c), None, "another member's");
        assert_eq!(first_life.ours(&d), None, "a later life's");
        assert_eq!(second_life.ours(&a), None, "an earlier life's");
        assert_eq!(first_life.ours(&1u64.to_le_bytes()), None, "not a context");
    }

    // Proves that two starts of one member draw different lives.
    #[test]
    fn a_restarted_member_does_not_repeat_its_contexts() {
        let (_, before) = ReadIds::new(1).next();
        let after = ReadIds::new(1);
        assert_eq!(after.ours(&before), None);
    }
}
