//! The planner: binds parsed SQL to typed expressions and a logical plan over the catalog, plans
//! materialized views, and turns logical plans into physical ones for `exec`.

mod binder;
mod cardinality;
pub use cardinality::{JoinEstimate, integer_constant};
mod error;
mod explain;
mod expr;
mod external;
mod integer_domains;
pub use integer_domains::IntegerDomain;
mod interval_join;
mod logical;
mod models;
pub use models::{ModelOp, OPENAI_SECRET_TYPE, calls_models};
mod nearest;
mod optimizer;
pub use optimizer::OptimizerSettings;
mod physical;
mod plan;
mod repeated_scans;
mod scalar;
mod shared_aggregates;
mod spread;
mod sub_views;
mod system_tables;
mod tree;
mod types;
mod value_counts;
mod view;
mod view_ctes;
mod view_stream;

pub use binder::{
    Binder, interval_from_text, normalize, now_micros, object_name, procedure_for_call,
    table_changes,
};
pub use error::{PlanError, Result};
pub use expr::{
    AggregateCall, AggregateFunction, BinaryOp, BitwiseOp, BlobOp, DatePart, Expr, Frame,
    FrameBound, FrameExclusion, FrameOffset, FrameUnits, IntervalOp, JoinKind, JsonOp, JsonStyle,
    Lambda, LambdaOp, ListOp, MapOp, MathOp, Moment, PythonCall, PythonFunction, ScalarFunction,
    SortKey, Subquery, TextOp, VectorDistance, WindowExpr, WindowFunction,
};
pub use external::{ExternalFile, ExternalTable, FileFormat};
pub use interval_join::StateExpiry;
pub use logical::{LogicalPlan, SubqueryKind, WorkingRows};
pub use physical::{Nearest, PhysicalPlan, Slice, create_physical_plan};
pub use plan::{Plan, RewriteKind};
pub use repeated_scans::RepeatedScan;
pub use scalar::ScalarValue;
pub use spread::{
    DEFAULT_NETWORK_BYTES_PER_SECOND, Spread, SpreadContext, SpreadMode, exchanges, fingerprint,
    fragment_of, spread, with_slice_part,
};
pub use sub_views::nested_view_statements;
pub use system_tables::SERVER_VERSION;
pub use tree::{PlanNode, TreeNode};
pub use types::{common_numeric_type, is_numeric, sql_type_from_ast};
pub use types::{expanded_array_type, push_array_item};
pub use value_counts::ValueCountsPlan;
pub use view::{
    StateRole, ViewPlan, WindowClose, load_view, plan_created_view, plan_view, plan_view_statement,
};
pub use view_stream::{JoinStatePlan, OwnIndex, StreamPlan, WindowPartitionPlan, window_chain};
