//! placeholder
#![cfg(feature = "sim")]
