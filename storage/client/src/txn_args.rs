//! The `strata txn` argument language:
//!
//! ```text
//! --if   'TARGET(KEY) OP ARG'   TARGET: value | exists | create | mod
//!                               OP: = | != | < | >   (exists: = or != true|false)
//! --then / --else  'put KEY VALUE' | 'del KEY' | 'get KEY' | 'range START [END [LIMIT]]'
//! ```
//! Words are separated by spaces; a value is the rest of the line after
//! its key, so it may hold spaces.

use strata_client::proto::{Compare, CompareOp, TxnOp};
use strata_client::txn;

/// Reads one `--if` condition.
pub fn compare(text: &str) -> Result<Compare, String> {
    let bad = |why: &str| format!("condition {text:?}: {why}");
    let open = text
        .find('(')
        .ok_or_else(|| bad("expected TARGET(KEY) OP ARG"))?;
    let close = text.rfind(')').ok_or_else(|| bad("missing `)`"))?;
    if close < open {
        return Err(bad("missing `)`"));
    }
    let target = text[..open].trim();
    let key = text[open + 1..close].to_string();
    if key.is_empty() {
        return Err(bad("empty key"));
    }
    let rest = text[close + 1..].trim_start();
    let (op, arg) = [
        ("!=", CompareOp::NotEqual),
        ("=", CompareOp::Equal),
        ("<", CompareOp::Less),
        (">", CompareOp::Greater),
    ]
    .into_iter()
    .find_map(|(sym, op)| rest.strip_prefix(sym).map(|arg| (op, arg.trim())))
    .ok_or_else(|| bad("expected an operator: = != < >"))?;
    let index = || arg.parse::<u64>().map_err(|_| bad("expected an index"));
    Ok(match target {
        "value" => txn::value(key, op, arg.to_string()),
        "create" => txn::create_index(key, op, index()?),
        "mod" => txn::mod_index(key, op, index()?),
        "exists" => {
            let want = match arg {
                "true" => true,
                "false" => false,
                _ => return Err(bad("exists compares with true or false")),
            };
            match op {
                CompareOp::Equal => txn::exists(key, want),
                CompareOp::NotEqual => txn::exists(key, !want),
                _ => return Err(bad("exists takes = or !=")),
            }
        }
        other => {
            return Err(bad(&format!(
                "unknown target {other:?}: value, exists, create or mod"
            )));
        }
    })
}

/// Reads one `--then` / `--else` operation.
pub fn op(text: &str) -> Result<TxnOp, String> {
    let bad = |why: &str| format!("operation {text:?}: {why}");
    let text = text.trim_start();
    let (verb, rest) = text.split_once(' ').unwrap_or((text, ""));
    let rest = rest.trim_start();
    let (first, tail) = rest.split_once(' ').unwrap_or((rest, ""));
    let words: Vec<&str> = rest.split_whitespace().collect();
    let key = || {
        if first.is_empty() {
            Err(bad("needs a key"))
        } else {
            Ok(first.to_string())
        }
    };
    Ok(match verb {
        "put" => {
            if tail.is_empty() && !rest.contains(' ') {
                return Err(bad("put KEY VALUE"));
            }
            txn::put(key()?, tail.to_string())
        }
        "del" | "delete" if words.len() == 1 => txn::delete(key()?),
        "get" if words.len() == 1 => txn::get(key()?),
        "range" if words.len() <= 3 => {
            let limit = match words.get(2) {
                Some(l) => l.parse().map_err(|_| bad("the limit is a number"))?,
                None => 0,
            };
            let start = words.first().copied().unwrap_or_default().to_string();
            let end = words.get(1).copied().unwrap_or_default().to_string();
            txn::range(start, end, limit)
        }
        "del" | "delete" | "get" | "range" => return Err(bad("wrong number of words")),
        other => {
            return Err(bad(&format!(
                "unknown operation {other:?}: put, del, get or range"
            )));
        }
    })
}

#[cfg(test)]
mod tests {
    use strata_client::proto::{compare::Target, txn_op::Op};

    use super::*;

    #[test]
    fn conditions_read_their_target_key_operator_and_argument() {
        let c = compare("mod(acct/a) = 12").unwrap();
        assert_eq!(
            (&c.key[..], c.op),
            (&b"acct/a"[..], CompareOp::Equal as i32)
        );
        assert_eq!(c.target, Some(Target::ModIndex(12)));
        let c = compare("value(k) != hello world").unwrap();
        assert_eq!(c.op, CompareOp::NotEqual as i32);
        assert_eq!(c.target, Some(Target::Value("hello world".into())));
        let c = compare("exists(lock) != true").unwrap();
        assert_eq!(c.target, Some(Target::Exists(false)));
        assert_eq!(
            compare("create(k) > 3").unwrap().target,
            Some(Target::CreateIndex(3))
        );
        for bad in [
            "mod(k) = x",
            "size(k) = 1",
            "value k = 1",
            "value() = 1",
            "exists(k) < true",
            "mod(k) ~ 1",
        ] {
            assert!(compare(bad).is_err(), "{bad} parsed");
        }
    }

    #[test]
    fn operations_read_their_words_and_a_put_keeps_its_value_whole() {
        let Some(Op::Put(p)) = op("put greeting hello there").unwrap().op else {
            panic!()
        };
        assert_eq!(
            (&p.key[..], &p.value[..]),
            (&b"greeting"[..], &b"hello there"[..])
        );
        assert!(matches!(op("get k").unwrap().op, Some(Op::Get(_))));
        assert!(matches!(op("del k").unwrap().op, Some(Op::Delete(_))));
        let Some(Op::Range(r)) = op("range a b 5").unwrap().op else {
            panic!()
        };
        assert_eq!(
            (&r.start[..], &r.end[..], r.limit),
            (&b"a"[..], &b"b"[..], 5)
        );
        for bad in ["put k", "get", "get a b", "range a b x", "swap k v"] {
            assert!(op(bad).is_err(), "{bad} parsed");
        }
    }
}
