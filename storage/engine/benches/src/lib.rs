//! The engines `db_bench` compares, behind one small trait.

#![forbid(unsafe_code)]

pub mod engines;
pub mod workload;
