//! A client's session: its settings (session, process, PostgreSQL's parameters, time zone,
//! optimizer, spread, vector search), prepared statements, temporary tables and open transaction.

pub(crate) mod optimizer_setting;
pub(crate) mod pg_parameters;
pub(crate) mod prepared;
pub(crate) mod procedures;
pub(crate) mod session;
pub(crate) mod settings;
pub(crate) mod spread_setting;
pub(crate) mod temporary;
pub(crate) mod time_zone;
pub(crate) mod transaction;
pub(crate) mod vector_setting;
