//! Reading back the OpenMetrics text [`NodeMetrics::encode`] writes, so
//! the JSON stats are the scrape's own numbers (one source, two views).
//!
//! This reads the subset of the format the registry produces: `# TYPE`,
//! `# HELP` and `# UNIT` lines, samples `name{label="value",...} number`
//! (label values escaped with `\\`, `\"` and `\n`), and `# EOF`. Exemplars
//! and timestamps are not written by the node, and are refused.
//!
//! [`NodeMetrics::encode`]: super::NodeMetrics::encode

use std::collections::BTreeMap;

/// One sample of a family: the part of its name after the family's
/// (`_total`, `_bucket`, `_sum`, `_count`, or nothing), its labels and value.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub suffix: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

impl Sample {
    /// The value of label `name`, or "" when the sample has none.
    pub fn label(&self, name: &str) -> &str {
        self.labels.get(name).map_or("", String::as_str)
    }
}

/// A metric family: its name (without suffixes), type and samples in the
/// order the scrape lists them.
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    pub name: String,
    pub kind: String,
    pub samples: Vec<Sample>,
}

/// A scrape read into families, in the order it lists them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scrape {
    pub families: Vec<Family>,
}

/// Why a text is not a scrape this module reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct ScrapeError {
    pub line: usize,
    pub reason: String,
}

impl Scrape {
    /// Reads `text`; every sample must belong to the family the last
    /// `# TYPE` line opened.
    pub fn parse(text: &str) -> Result<Scrape, ScrapeError> {
        let mut families: Vec<Family> = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let err = |reason: String| ScrapeError {
                line: n + 1,
                reason,
            };
            if line.is_empty() || line == "# EOF" {
                continue;
            }
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest
                    .split_once(' ')
                    .ok_or_else(|| err("TYPE without a type".into()))?;
                families.push(Family {
                    name: name.to_string(),
                    kind: kind.to_string(),
                    samples: Vec::new(),
                });
                continue;
            }
            if line.starts_with("# ") {
                // HELP and UNIT: nothing the stats need.
                continue;
            }
            let (name, labels, value) = sample(line).map_err(err)?;
            let family = families
                .last_mut()
                .ok_or_else(|| err(format!("sample {name} before any TYPE line")))?;
            let suffix = name
                .strip_prefix(family.name.as_str())
                .ok_or_else(|| err(format!("sample {name} outside family {}", family.name)))?;
            family.samples.push(Sample {
                suffix: suffix.to_string(),
                labels,
                value,
            });
        }
        Ok(Scrape { families })
    }
}

type Parsed = (String, BTreeMap<String, String>, f64);

/// One sample line: name, labels, value.
fn sample(line: &str) -> Result<Parsed, String> {
    let name_end = line
        .find(['{', ' '])
        .ok_or_else(|| format!("no value in {line:?}"))?;
    let name = &line[..name_end];
    let mut rest = &line[name_end..];
    let mut labels = BTreeMap::new();
    if let Some(after) = rest.strip_prefix('{') {
        rest = after;
        loop {
            if let Some(after) = rest.strip_prefix('}') {
                rest = after;
                break;
            }
            let (key, after) = rest
                .split_once("=\"")
                .ok_or_else(|| format!("malformed labels in {line:?}"))?;
            let (value, after) = label_value(after)?;
            labels.insert(key.to_string(), value);
            rest = after.strip_prefix(',').unwrap_or(after);
        }
    }
    let value = rest.trim();
    if value.contains(' ') {
        return Err(format!("timestamps and exemplars are not read: {line:?}"));
    }
    let value = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        "NaN" => f64::NAN,
        v => v
            .parse()
            .map_err(|_| format!("value {v:?} is not a number"))?,
    };
    Ok((name.to_string(), labels, value))
}

/// A label value up to its closing quote, unescaped, and what follows it.
fn label_value(text: &str) -> Result<(String, &str), String> {
    let mut out = String::new();
    let mut chars = text.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Ok((out, &text[i + 1..])),
            '\\' => match chars.next() {
                Some((_, 'n')) => out.push('\n'),
                Some((_, c @ ('\\' | '"'))) => out.push(c),
                other => return Err(format!("bad escape {other:?} in a label value")),
            },
            c => out.push(c),
        }
    }
    Err("unterminated label value".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_families_samples_labels_and_escapes() {
        // Proves the parts the registry writes come back: family names
        // without suffixes, each sample's suffix, escaped label values,
        // +Inf, and the order of families and samples.
        let text = r#"# HELP strata_api_requests Requests answered.
# TYPE strata_api_requests counter
strata_api_requests_total{protocol="rest",route="GET /v1/kv/{key}",code="200"} 5
strata_api_requests_total{protocol="rest",route="odd \"q\" \\ \n",code="404"} 1
# HELP strata_raft_term The term.
# TYPE strata_raft_term gauge
strata_raft_term 7.0
# TYPE strata_raft_commit_seconds histogram
# UNIT strata_raft_commit_seconds seconds
strata_raft_commit_seconds_sum 0.5
strata_raft_commit_seconds_count 2
strata_raft_commit_seconds_bucket{le="0.001"} 1
strata_raft_commit_seconds_bucket{le="+Inf"} 2
# EOF
"#;
        let s = Scrape::parse(text).unwrap();
        let names: Vec<&str> = s.families.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "strata_api_requests",
                "strata_raft_term",
                "strata_raft_commit_seconds"
            ]
        );
        let req = &s.families[0].samples;
        assert_eq!(req[0].suffix, "_total");
        assert_eq!(req[0].label("route"), "GET /v1/kv/{key}");
        assert_eq!(req[0].value, 5.0);
        assert_eq!(req[1].label("route"), "odd \"q\" \\ \n");
        assert_eq!(s.families[1].samples[0].value, 7.0);
        let hist = &s.families[2].samples;
        assert_eq!(hist[0].suffix, "_sum");
        assert_eq!(hist[3].label("le"), "+Inf");
        assert_eq!(s.families[2].kind, "histogram");
    }

    #[test]
    fn refuses_what_it_does_not_read() {
        // Proves a sample outside its family, one before any family, a
        // timestamp and an unterminated label are errors with their line,
        // not silently misread numbers.
        let outside = "# TYPE a gauge\nb 1\n";
        assert_eq!(Scrape::parse(outside).unwrap_err().line, 2);
        assert!(Scrape::parse("a 1\n").is_err());
        assert!(Scrape::parse("# TYPE a gauge\na 1 1700000000\n").is_err());
        assert!(Scrape::parse("# TYPE a gauge\na{x=\"y} 1\n").is_err());
        assert!(Scrape::parse("# TYPE a gauge\na x\n").is_err());
    }
}
