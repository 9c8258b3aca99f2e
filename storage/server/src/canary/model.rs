//! The sequential specification the canary's history is checked against: one
//! register per key, read, written and compared-and-swapped.
//!
//! Values are the decimal text of a number unique within a window, so the
//! model holds numbers. Every window starts on fresh keys, so every register
//! starts absent.

use std::fmt;

/// A value read back that no canary wrote (not the decimal text of a
/// number). No operation writes it, so a read that returns it can never be
/// linearized: the checker reports it as a violation.
pub const FOREIGN_VALUE: u64 = u64::MAX;

/// One operation on a register.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Read,
    Write {
        value: u64,
    },
    /// Sets `value` if the register holds `expected` (absent when `None`).
    Cas {
        expected: Option<u64>,
        value: u64,
    },
}

/// What an operation answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ret {
    /// A read's value; `None` when the key was absent.
    Value {
        value: Option<u64>,
    },
    Written,
    /// Whether the swap happened, and the value before it (as the node
    /// answers a compare-and-swap).
    Cas {
        succeeded: bool,
        previous: Option<u64>,
    },
}

/// Applies `op` to a register holding `state`: the new state and what the
/// operation answers.
pub fn apply(state: Option<u64>, op: Op) -> (Option<u64>, Ret) {
    match op {
        Op::Read => (state, Ret::Value { value: state }),
        Op::Write { value } => (Some(value), Ret::Written),
        Op::Cas { expected, value } => {
            let succeeded = state == expected;
            let next = if succeeded { Some(value) } else { state };
            (
                next,
                Ret::Cas {
                    succeeded,
                    previous: state,
                },
            )
        }
    }
}

fn show(value: Option<u64>) -> String {
    match value {
        None => "absent".into(),
        Some(FOREIGN_VALUE) => "foreign".into(),
        Some(v) => v.to_string(),
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::Read => write!(f, "read"),
            Op::Write { value } => write!(f, "write {value}"),
            Op::Cas { expected, value } => write!(f, "cas {} -> {value}", show(*expected)),
        }
    }
}

impl fmt::Display for Ret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ret::Value { value } => write!(f, "{}", show(*value)),
            Ret::Written => write!(f, "written"),
            Ret::Cas {
                succeeded: true,
                previous,
            } => write!(f, "swapped, was {}", show(*previous)),
            Ret::Cas {
                succeeded: false,
                previous,
            } => write!(f, "not swapped, was {}", show(*previous)),
        }
    }
}

/// The model's number for a value read back.
pub fn decode(bytes: &[u8]) -> u64 {
    std::str::from_utf8(bytes)
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .filter(|v| *v != FOREIGN_VALUE)
        .unwrap_or(FOREIGN_VALUE)
}

/// The bytes written for `value`.
pub fn encode(value: u64) -> Vec<u8> {
    value.to_string().into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cas_swaps_only_on_a_match_and_reports_the_previous_value() {
        assert_eq!(
            apply(
                None,
                Op::Cas {
                    expected: None,
                    value: 1
                }
            ),
            (
                Some(1),
                Ret::Cas {
                    succeeded: true,
                    previous: None
                }
            )
        );
        assert_eq!(
            apply(
                Some(1),
                Op::Cas {
                    expected: Some(2),
                    value: 3
                }
            ),
            (
                Some(1),
                Ret::Cas {
                    succeeded: false,
                    previous: Some(1)
                }
            )
        );
    }

    #[test]
    fn values_round_trip_and_strangers_decode_as_foreign() {
        assert_eq!(decode(&encode(42)), 42);
        assert_eq!(decode(b"not a number"), FOREIGN_VALUE);
        assert_eq!(decode(u64::MAX.to_string().as_bytes()), FOREIGN_VALUE);
    }
}
