//! The cluster itself: which node leads a lake and for how long (a term taken through the
//! bucket, kept by beats), nodes following the leader's commits, and the commits followers
//! hand to it.

pub(crate) mod forwarded;
pub(crate) mod leader;
pub(crate) mod lease;
pub(crate) mod roles;
