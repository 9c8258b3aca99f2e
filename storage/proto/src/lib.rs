//! Generated types and service stubs for the `strata.v1` contract in
//! `proto/strata/v1`. This crate is the only definition of the wire format.

#![allow(clippy::all, missing_docs)]

pub mod v1 {
    tonic::include_proto!("strata.v1");
}

/// Encoded `FileDescriptorSet` of every `strata.v1` file, for gRPC reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] = tonic::include_file_descriptor_set!("strata_descriptor");

pub mod backup;

// The unit tests' allocator notes each thread's largest allocation, so a
// test can bound what reading a backup holds (`backup`).
#[cfg(test)]
#[global_allocator]
static TEST_ALLOCATOR: strata_arena::LargestAllocation = strata_arena::LargestAllocation;
