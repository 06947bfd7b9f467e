//! The write path: a writing statement prepared as changes against a snapshot and committed
//! as one durable catalog commit; appends exactly once per producer (several in flight, in
//! line), bulk loads, COPY, and
//! writes inside a statement's WITH.

pub(crate) mod append;
pub(crate) mod bulk;
pub(crate) mod commit;
pub(crate) mod copy;
pub(crate) mod notebooks;
pub(crate) mod producer_lines;
pub(crate) mod with_writes;
