use std::fmt;

use arrow::datatypes::DataType;

use crate::scalar::ScalarValue;
use crate::tree::TreeNode;

/// A bound, typed scalar expression over the columns of its input.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// The input's column at `index`.
    Column {
        index: usize,
        name: String,
        data_type: DataType,
    },
    Literal(ScalarValue),
    Binary {
        op: BinaryOp,
        left: Box<Expr>,
        right: Box<Expr>,
    },
    Not(Box<Expr>),
    Negative(Box<Expr>),
    IsNull(Box<Expr>),
    IsNotNull(Box<Expr>),
    Cast {
        expr: Box<Expr>,
        data_type: DataType,
    },
    /// `CASE WHEN c1 THEN r1 ... ELSE e END`; a simple CASE is bound to this form.
    Case {
        branches: Vec<(Expr, Expr)>,
        otherwise: Option<Box<Expr>>,
        data_type: DataType,
    },
    InList {
        expr: Box<Expr>,
        list: Vec<Expr>,
        negated: bool,
    },
    Like {
        expr: Box<Expr>,
        pattern: Box<Expr>,
        negated: bool,
        case_insensitive: bool,
    },
    Function {
        func: ScalarFunction,
        args: Vec<Expr>,
        data_type: DataType,
    },
    /// A column of the enclosing query, inside a correlated subquery. Only the planner sees
    /// it: decorrelation turns it into a join.
    OuterColumn {
        index: usize,
        name: String,
        data_type: DataType,
    },
    /// A column of a query further out: `depth` 2 is the enclosing query's enclosing query
    /// (nested correlated subqueries). Decorrelating the subquery it sits in takes it for a
    /// constant and brings it a level nearer; at depth 1, once that subquery is a join, it is
    /// an `OuterColumn` of the query the join is in.
    DeepOuterColumn(Box<DeepColumn>),
    /// An uncorrelated subquery's single value, computed once before the query runs.
    ScalarSubquery(Subquery),
    /// A list function applying a lambda to each list's elements (ADR 0061).
    Lambda(Box<Lambda>),
    /// A call of a Python function, run in a worker process (ADR 0081).
    Python(Box<PythonCall>),
}

/// A call of a Python function: the arguments, each already cast to its parameter's type.
#[derive(Clone, Debug, PartialEq)]
pub struct PythonCall {
    pub function: std::sync::Arc<PythonFunction>,
    pub args: Vec<Expr>,
}

/// A Python function as its workers compile it (ADR 0081).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PythonFunction {
    pub name: String,
    pub parameters: Vec<String>,
    /// The body of the Python function `name(parameters)`: statements ending in a `return`.
    pub source: String,
    /// Called once per batch on arrays, rather than once per row on values.
    pub vectorized: bool,
    pub returns: DataType,
}

/// `list_transform(list, x -> body)` and its kin. The list, a reduction's initial value and
/// the captured columns are over the query's input like any expression; `body` is over the
/// lambda's own columns only: the parameters, then one per captured expression, each element
/// seeing its row's value. No rewrite of the query's columns needs to reach into it.
#[derive(Clone, Debug, PartialEq)]
pub struct Lambda {
    pub op: LambdaOp,
    pub list: Expr,
    pub initial: Option<Expr>,
    pub captured: Vec<Expr>,
    pub body: Expr,
    /// Whether the last parameter is the element's position in its list (from 1).
    pub with_index: bool,
    pub data_type: DataType,
}

/// A statistic of the third or fourth moment about the mean.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Moment {
    /// The sample skewness, adjusted for bias.
    Skewness,
    /// The sample excess kurtosis, adjusted for bias.
    Kurtosis,
    /// The population excess kurtosis.
    KurtosisPop,
}

impl Moment {
    pub fn name(self) -> &'static str {
        match self {
            Moment::Skewness => "skewness",
            Moment::Kurtosis => "kurtosis",
            Moment::KurtosisPop => "kurtosis_pop",
        }
    }
}

/// What a lambda list function does with the body's values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LambdaOp {
    /// Each element replaced by the body's value (`list_transform`): parameters `(x [, i])`.
    Transform,
    /// The elements for which the body holds (`list_filter`): parameters `(x [, i])`.
    Filter,
    /// The elements folded from the first (or the initial value) by the body
    /// (`list_reduce`): parameters `(accumulator, x [, i])`.
    Reduce,
}

impl LambdaOp {
    pub fn name(self) -> &'static str {
        match self {
            LambdaOp::Transform => "list_transform",
            LambdaOp::Filter => "list_filter",
            LambdaOp::Reduce => "list_reduce",
        }
    }
}

/// A subquery's plan inside an expression. Two subqueries are the same only if they are the
/// same object.
#[derive(Clone, Debug)]
pub struct Subquery {
    pub plan: std::sync::Arc<crate::logical::LogicalPlan>,
    /// The plan that computes it, made when the plan holding the expression is planned
    /// (`create_physical_plan`), so that running a query plans nothing; `None` in a logical plan.
    pub physical: Option<std::sync::Arc<crate::physical::PhysicalPlan>>,
}

impl Subquery {
    /// A subquery not planned yet.
    pub fn new(plan: crate::logical::LogicalPlan) -> Subquery {
        Subquery {
            plan: std::sync::Arc::new(plan),
            physical: None,
        }
    }
}

impl PartialEq for Subquery {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.plan, &other.plan)
    }
}

/// How a join combines its two inputs. The left input is probed, the right one is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JoinKind {
    /// Matching pairs; with no keys and no filter, the cross product.
    Inner,
    /// Matching pairs, plus left rows without a match (right side NULL).
    Left,
    /// Left join plus right rows without a match (left side NULL).
    Full,
    /// Matching pairs, plus right rows without a match (left side NULL): a left join with its
    /// inputs swapped, so that the smaller input, the one kept whole, is built.
    Right,
    /// Left rows with at least one match; only the left columns.
    Semi,
    /// Left rows without any match; only the left columns.
    Anti,
    /// `NOT IN`: an anti join where a NULL key on either side makes the answer unknown, so the
    /// row is dropped (unless the right side is empty).
    NullAwareAnti,
    /// A left join to a relation of at most one row (a scalar subquery); more rows is an error.
    Single,
    /// The left rows, each with one more BOOLEAN column: whether it has a match (`EXISTS`).
    Mark,
    /// As `Mark`, for `IN`: NULL instead of false when there is no match but a NULL key on
    /// either side.
    MarkIn,
    /// Right rows with at least one match; only the right columns. A semi join whose filtered
    /// side is the smaller one: that side is built, the larger one streams through it.
    RightSemi,
    /// Right rows without any match; only the right columns.
    RightAnti,
}

impl JoinKind {
    /// True when the output has only the right input's columns.
    pub fn right_only(self) -> bool {
        matches!(self, JoinKind::RightSemi | JoinKind::RightAnti)
    }

    /// True when the output has only the left input's columns.
    pub fn left_only(self) -> bool {
        matches!(
            self,
            JoinKind::Semi | JoinKind::Anti | JoinKind::NullAwareAnti
        )
    }
}

/// Operators with two operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    Plus,
    Minus,
    Multiply,
    Divide,
    Modulo,
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
    And,
    Or,
    Concat,
}

impl BinaryOp {
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinaryOp::Eq
                | BinaryOp::NotEq
                | BinaryOp::Lt
                | BinaryOp::LtEq
                | BinaryOp::Gt
                | BinaryOp::GtEq
        )
    }

    pub fn is_arithmetic(self) -> bool {
        matches!(
            self,
            BinaryOp::Plus
                | BinaryOp::Minus
                | BinaryOp::Multiply
                | BinaryOp::Divide
                | BinaryOp::Modulo
        )
    }

    fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Plus => "+",
            BinaryOp::Minus => "-",
            BinaryOp::Multiply => "*",
            BinaryOp::Divide => "/",
            BinaryOp::Modulo => "%",
            BinaryOp::Eq => "=",
            BinaryOp::NotEq => "<>",
            BinaryOp::Lt => "<",
            BinaryOp::LtEq => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::GtEq => ">=",
            BinaryOp::And => "AND",
            BinaryOp::Or => "OR",
            BinaryOp::Concat => "||",
        }
    }
}

/// The distances and products of two vectors (ADR 0082).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VectorDistance {
    /// `array_distance`, `<->`: the Euclidean distance.
    Euclidean,
    /// `array_cosine_distance`, `<=>`: one less the cosine similarity.
    CosineDistance,
    /// `array_cosine_similarity`.
    CosineSimilarity,
    /// `array_inner_product`.
    InnerProduct,
    /// `array_negative_inner_product`, `<#>`.
    NegativeInnerProduct,
}

impl VectorDistance {
    pub fn name(self) -> &'static str {
        match self {
            VectorDistance::Euclidean => "array_distance",
            VectorDistance::CosineDistance => "array_cosine_distance",
            VectorDistance::CosineSimilarity => "array_cosine_similarity",
            VectorDistance::InnerProduct => "array_inner_product",
            VectorDistance::NegativeInnerProduct => "array_negative_inner_product",
        }
    }

    /// The index metric whose order this distance follows, smallest first; none for the
    /// similarities, whose greatest come first.
    pub fn metric(self) -> Option<pondra_catalog::VectorMetric> {
        use pondra_catalog::VectorMetric;
        match self {
            VectorDistance::Euclidean => Some(VectorMetric::L2Sq),
            VectorDistance::CosineDistance => Some(VectorMetric::Cosine),
            VectorDistance::NegativeInnerProduct => Some(VectorMetric::Ip),
            VectorDistance::CosineSimilarity | VectorDistance::InnerProduct => None,
        }
    }
}

/// Scalar functions the executor evaluates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScalarFunction {
    /// A stable hash of its arguments' values (ADR 0054): the lead key of a count table whose
    /// group is not all integers. Never bound from SQL.
    KeyHash,
    Coalesce,
    NullIf,
    Abs,
    Lower,
    Upper,
    Length,
    Round,
    /// `SUBSTRING(s FROM start [FOR length])`, 1-based as in SQL.
    Substring,
    /// `EXTRACT(part FROM value)`.
    DatePart(DatePart),
    Ceil,
    Floor,
    Sqrt,
    Ln,
    Exp,
    Power,
    /// `trim`, `ltrim`, `rtrim`: (leading, trailing).
    Trim(bool, bool),
    Replace,
    /// `concat(...)`: NULL arguments count as empty strings.
    Concat,
    /// `strpos(s, sub)`, `position(sub IN s)`: 1-based, 0 when absent.
    Position,
    StartsWith,
    Left,
    Right,
    Reverse,
    Repeat,
    /// `lpad(s, length, fill)` / `rpad`: `s` cut or filled to `length` characters, on the
    /// left or the right.
    Pad {
        left: bool,
    },
    /// `split_part(s, delimiter, n)`: the n-th field (from the end when negative), 1-based.
    SplitPart,
    /// `TRY_CAST(x AS t)`: NULL where the cast fails.
    TryCast,
    /// An ordered-set aggregate's pick from a group's sorted non-NULL values and a fraction:
    /// interpolated between the two nearest (`percentile_cont`), or the first whose place is
    /// at least the fraction (`percentile_disc`).
    SortedQuantile {
        continuous: bool,
    },
    /// The most frequent of a group's sorted values, the first of equally frequent ones.
    SortedMode,
    /// `mode(x ORDER BY y)`: the most frequent value of a list, of equally frequent ones the
    /// first in the list.
    ModeInOrder,
    /// `approx_top_k(x, k)` (DuckDB): a list of the `k` (a constant) most frequent of a
    /// group's sorted values, the most frequent first, equally frequent ones in value order.
    /// Counted exactly.
    SortedTopK,
    /// `random()`: a DOUBLE drawn uniformly from [0, 1), a new one for each row.
    Random,
    /// `entropy(x)` (DuckDB): the base-2 entropy of how often each of a group's sorted
    /// non-NULL values occurs; 0 for no values.
    SortedEntropy,
    /// `mad(x)` (DuckDB): the median of the distances of a group's sorted non-NULL numbers
    /// from their median, as DOUBLE.
    SortedMad,
    /// `kurtosis`, `kurtosis_pop`, `skewness` (DuckDB) from a group's count and its sums of
    /// x, x², x³ and x⁴: NULL where too few values or no spread, an error where not finite.
    MomentStatistic(Moment),
    /// `json -> key`, `json ->> key`, `json_extract(json, path)`, `json_extract_string`: the
    /// value a key, an index or a `$.a[0]` path leads to, as JSON or (`text`) as text.
    JsonGet {
        text: bool,
    },
    /// `CAST(text AS JSON)`: the text, checked to be JSON.
    JsonCheck,
    /// Text read as a UUID and written in its canonical form (lower-case, hyphenated).
    UuidText,
    /// A date or timestamp with its infinities as NULL, for the parts they have none of.
    FiniteOnly,
    /// A random (version 4) UUID per row, as canonical text.
    RandomUuid,
    /// `make_date(year, month, day)`.
    MakeDate,
    /// `make_timestamp(year, month, day, hour, minute, seconds)`.
    MakeTimestamp,
    /// `age(a, b)`: an interval of years and months, days and time, as PostgreSQL counts it.
    Age,
    /// `last_day(d)`: the last day of its month.
    LastDay,
    /// An interval of a number of `part`s (`INTERVAL (n) DAY`, `to_days(n)`); seconds and
    /// their fractions take a DOUBLE, the other parts a BIGINT.
    IntervalOf(DatePart),
    /// `trunc(x, n)`: `x` cut toward zero to `n` digits after the point (before it when `n`
    /// is negative), in `x`'s type.
    TruncDigits,
    /// `roundbankers(x, n)`: `x` to `n` digits, ties to the even digit, in `x`'s type.
    RoundBankers,
    /// The math library (`log`, `sin`, `gamma`, `isnan`, ...).
    Math(MathOp),
    /// Text functions beyond the core ones (`levenshtein`, `translate`, `concat_ws`, ...).
    Text(TextOp),
    /// `ai_embed(text, model)` or `ai_complete(prompt, model)` (ADR 0082): asked of a
    /// model's endpoint, batch by batch, answers kept in the lake.
    Model(crate::models::ModelOp),
    /// A value cast to a narrow or wide integer name, checked to lie in its range: an error
    /// outside it, or NULL when `lenient` (TRY_CAST).
    IntegerRange {
        domain: crate::IntegerDomain,
        lenient: bool,
    },
    /// `strftime(timestamp, format)`.
    Strftime,
    /// `regexp_extract(s, pattern, group)`.
    RegexpExtract,
    /// Each list of integers folded by `&`, `|` or `#` (xor), NULLs passed over; NULL for a
    /// list with no values. `bit_and(x)` and the like are this over the group's values.
    BitFold(BitwiseOp),
    /// `time_bucket(width, timestamp [, origin])` (DuckDB): the start of the bucket of `width`
    /// the timestamp falls in, buckets counted from the origin (2000-01-03, a Monday, for
    /// widths in days and less; 2000-01-01 for widths in months).
    TimeBucket,
    /// DuckDB's list functions (`list_concat`, `list_contains`, ...).
    List(ListOp),
    /// `regexp_extract_all(s, pattern, group)`: every match's group, as a list.
    RegexpExtractAll,
    /// `strptime(text, format or formats)`: a timestamp; NULL where no format reads the text
    /// when `lenient` (`try_strptime`), an error otherwise. With `zoned` (a constant format
    /// that reads an offset, `%z`) the instant the text names, as a TIMESTAMPTZ.
    Strptime {
        lenient: bool,
        zoned: bool,
    },
    /// `string_split(s, separator)`: an array of text.
    StringSplit,
    /// An array with each run of equal elements kept once (`array_agg(DISTINCT ...)` over
    /// sorted values).
    DistinctRuns,
    /// The largest / smallest non-NULL argument.
    Greatest,
    Least,
    DateTrunc(DatePart),
    /// Whether a regular expression matches anywhere in the string (case-insensitively).
    RegexpMatch(bool),
    /// Replaces the first match (every match when global) of a regular expression:
    /// (global, case-insensitive).
    RegexpReplace(bool, bool),
    /// Whole `part` boundaries crossed from the first date to the second.
    DateDiff(DatePart),
    /// `date_sub(part, a, b)` (DuckDB): whole `part`s elapsed from `a` to `b`, truncated
    /// toward zero.
    DateSub(DatePart),
    /// `list_aggr(list, 'name')` (DuckDB): the aggregate of each list's elements; a string
    /// aggregate's separator comes as a second argument.
    ListAggregate(AggregateFunction),
    /// `&`, `|`, `#`, `<<`, `>>` on two integers of one type; shifts wrap as in Postgres.
    Bitwise(BitwiseOp),
    /// `ARRAY[a, b, ...]`, at least one element.
    MakeArray,
    /// `a[i]`, 1-based; NULL outside the array.
    ArrayElement,
    /// `array_length(a, dimension)`, `array_upper(a, dimension)`.
    ArrayLength,
    /// `cardinality(a)`.
    Cardinality,
    /// A distance between two vectors of one length (ADR 0082), as a DOUBLE.
    VectorDistance(VectorDistance),
    /// `array_to_string(a, separator [, null_text])`.
    ArrayToString,
    /// `x op ANY (array)`, or `x op ALL (array)`. With `rows`, `x` is a row value
    /// (`(a, b)`) and the array's elements are rows too, compared as SQL compares rows:
    /// field after field, NULL where a NULL field decides.
    Quantified {
        op: BinaryOp,
        all: bool,
        rows: bool,
    },
    /// The BIGINTs from a start to a stop by a step, as an array; the stop is in it when
    /// `inclusive` (`generate_series`) and not otherwise (`range`).
    Series {
        inclusive: bool,
    },
    /// Likewise, the TIMESTAMPs from a start to a stop by an interval.
    TimeSeries {
        inclusive: bool,
    },
    /// `_pg_expandarray(a)`: each element of an array with its position from 1, as an array
    /// of records `(x, n)`.
    ExpandArray,
    /// `(record).field`: the field at this position of a record.
    Field(usize),
    /// `regexp_extract(s, pattern, names)` (`all`: `regexp_extract_all`): the groups as a
    /// struct named by the call's type.
    RegexpGroups {
        all: bool,
        insensitive: bool,
    },
    /// `MAP {k: v, ...}`: a map of the arguments, keys and values alternating, of the call's
    /// map type (ADR 0064).
    MakeMap,
    /// The map functions (ADR 0064).
    Map(MapOp),
    /// The functions over bytes (ADR 0066).
    Blob(BlobOp),
    /// Parts, truncation and scaling of intervals.
    Interval(IntervalOp),
    /// `time ± interval` (a TIME, wrapping around midnight) and `time - time` (an INTERVAL),
    /// by the second argument's type (ADR 0065).
    TimeArithmetic {
        subtract: bool,
    },
    /// `error(message)`: fails the statement with the message of the first row it is
    /// evaluated on (CASE evaluates it only on the rows that reach it).
    RaiseError,
    /// `{'a': x}`, `struct_pack(a := x)`, `row(x)`: a struct of the arguments, named by the
    /// call's struct type (ADR 0063).
    MakeStruct,
    /// The JSON functions over JSON held as text (`json_functions`).
    Json(JsonOp),
    /// `pondra_panic(text)`: a panic on purpose, to show that one is caught at the statement's
    /// boundary. Only builds with the `fault-injection` feature bind the name.
    InjectedPanic,
}

/// A map function (`ScalarFunction::Map`, ADR 0064).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapOp {
    /// `map(keys, values)`: the keys of one list with the values of the other.
    FromLists,
    /// `map_from_entries(list)`: from a list of structs of a key and a value.
    FromEntries,
    Keys,
    Values,
    /// `map_entries(m)`: a list of structs of a key and a value.
    Entries,
    /// `m[k]`: the value, or NULL.
    Element,
    /// `map_extract(m, k)`: a list of the value, empty when the map has no such key.
    Extract,
    Contains,
    Cardinality,
    /// `histogram(x)`: each of a sorted list's values with its count.
    Histogram,
    /// `histogram(x, boundaries)`: each boundary (sorted, once) with the count of the sorted
    /// list's values above the boundary before it and at most it; values above every
    /// boundary are counted under the type's greatest value.
    Bins,
    /// `histogram_exact(x, bins)`: each bin (sorted, once) with the count of the sorted
    /// list's values equal to it; the others are counted under the type's "other" key, as
    /// for `Bins`.
    ExactBins,
    /// `is_histogram_other_bin(x)`: whether `x` is its type's "other" key.
    IsOtherBin,
}

/// How JSON text is written: DuckDB's compactly (`{"a":1,"b":[1,2]}`), PostgreSQL's `jsonb`
/// with spaces (`{"a": 1, "b": [1, 2]}`), or as PostgreSQL's `json` builders write objects
/// (`{"a" : 1, "b" : [1,2]}`, `json_object_agg` inside padded braces).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JsonStyle {
    Compact,
    Jsonb,
    PgJson,
    PgJsonAgg,
}

/// A JSON function (`ScalarFunction::Json`), over JSON held as text. Values that go into a
/// document are JSON text by then (`ToJson`), so builders only assemble.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JsonOp {
    /// `to_json(x)`: a value as JSON text (lists as arrays, structs and maps as objects).
    ToJson(JsonStyle),
    /// JSON text written again in a style (what a `jsonb` function returns).
    Restyle(JsonStyle),
    /// `json_object(k, v, ...)`, `json_build_object`: text keys and JSON values alternating.
    Object(JsonStyle),
    /// `json_array(...)`, `json_build_array`: of JSON values.
    Array(JsonStyle),
    /// A list of JSON values as one array (`json_agg`'s last step); NULL for a NULL list.
    ArrayOfList(JsonStyle),
    /// A list of `{key, value}` structs (text key, JSON value) as one object
    /// (`json_object_agg`'s last step).
    ObjectOfEntries(JsonStyle),
    /// PostgreSQL's `json_object(text[])` (keys and values alternating) and
    /// `json_object(keys text[], values text[])`: an object of text values.
    ObjectOfTexts,
    /// `json_array_length(j [, path])`: 0 for what is not an array, or with `strict`
    /// (`jsonb_array_length`) an error.
    ArrayLength { strict: bool },
    /// `json_typeof(j)` (PostgreSQL's names: object, array, string, number, boolean, null) or
    /// with `duckdb` `json_type(j [, path])` (OBJECT, ARRAY, VARCHAR, BIGINT, UBIGINT, DOUBLE,
    /// BOOLEAN, NULL).
    TypeOf { duckdb: bool },
    /// `json_keys(j [, path])`: an object's keys as a list, in order.
    Keys,
    /// `json_valid(text)`.
    Valid,
    /// `json_exists(j, path)`: whether the path leads somewhere.
    Exists,
    /// `json_contains(haystack, needle)`, `@>` of `jsonb`: whether the needle is contained.
    Contains,
    /// `json_merge_patch(a, b, ...)` (RFC 7396).
    MergePatch,
    /// `json_strip_nulls(j)`: without the object members whose value is null, at any depth.
    StripNulls(JsonStyle),
    /// `json_pretty(j)`, `jsonb_pretty`: indented by four spaces.
    Pretty,
    /// `jsonb_set(target, path, value [, create_missing])`.
    Set,
    /// `json_value(j, path)`: a scalar's JSON, NULL for an object or an array.
    Value,
    /// `json_extract_path(j, VARIADIC keys)`, `j #> path`: keys, and array places as numbers,
    /// from a list; the value as JSON or (`text`) as text.
    ExtractPath { text: bool },
    /// `json_array_elements(j)`: the elements as a list, as JSON or (`text`) as text.
    Elements { text: bool },
    /// `json_each(j)`: the members as a list of `{key, value}`, values as JSON or as text.
    Entries { text: bool },
}

impl JsonOp {
    pub fn name(self) -> &'static str {
        match self {
            JsonOp::ToJson(JsonStyle::Jsonb) => "to_jsonb",
            JsonOp::ToJson(_) => "to_json",
            JsonOp::Restyle(_) => "jsonb",
            JsonOp::Object(JsonStyle::Compact) => "json_object",
            JsonOp::Object(JsonStyle::Jsonb) => "jsonb_build_object",
            JsonOp::Object(_) => "json_build_object",
            JsonOp::Array(JsonStyle::Compact) => "json_array",
            JsonOp::Array(_) => "json_build_array",
            JsonOp::ArrayOfList(_) => "json_agg",
            JsonOp::ObjectOfEntries(_) => "json_object_agg",
            JsonOp::ObjectOfTexts => "json_object",
            JsonOp::ArrayLength { .. } => "json_array_length",
            JsonOp::TypeOf { duckdb: true } => "json_type",
            JsonOp::TypeOf { duckdb: false } => "json_typeof",
            JsonOp::Keys => "json_keys",
            JsonOp::Valid => "json_valid",
            JsonOp::Exists => "json_exists",
            JsonOp::Contains => "json_contains",
            JsonOp::MergePatch => "json_merge_patch",
            JsonOp::StripNulls(_) => "json_strip_nulls",
            JsonOp::Pretty => "json_pretty",
            JsonOp::Set => "jsonb_set",
            JsonOp::Value => "json_value",
            JsonOp::ExtractPath { text: false } => "json_extract_path",
            JsonOp::ExtractPath { text: true } => "json_extract_path_text",
            JsonOp::Elements { text: false } => "json_array_elements",
            JsonOp::Elements { text: true } => "json_array_elements_text",
            JsonOp::Entries { text: false } => "json_each",
            JsonOp::Entries { text: true } => "json_each_text",
        }
    }
}

/// A function of an interval (`ScalarFunction::Interval`), as DuckDB has it: a year is 12
/// months, a month 30 days where one becomes the other, a day 24 hours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntervalOp {
    /// One field: years and months from the months, days, the time fields from the rest.
    Part(DatePart),
    /// The whole as seconds (a DOUBLE), a year counted as 365.25 days.
    Epoch,
    /// The whole as a BIGINT count of `per_second` units (milli-, micro-, nanoseconds), a
    /// month counted as 30 days.
    EpochUnits { per_second: i64 },
    /// The seconds field with its fraction, in nanoseconds.
    Nanosecond,
    /// The fields smaller than a part zeroed.
    Trunc(DatePart),
    /// `interval * number` (a DOUBLE), or `/` with `divide`.
    Scale { divide: bool },
}

/// A function over bytes (`ScalarFunction::Blob`, ADR 0066). Those that read bytes take a
/// BLOB or text (its UTF-8 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlobOp {
    OctetLength,
    /// Upper-case hex digits of the bytes.
    Hex,
    /// The bytes that hex digits spell.
    Unhex,
    ToBase64,
    FromBase64,
    /// `encode(text)`: the text's UTF-8 bytes.
    Encode,
    /// `decode(blob)`: the bytes as UTF-8 text, which they must be.
    Decode,
    /// The digest as lower-case hex.
    Md5,
    Sha256,
    /// `blob || blob`.
    Concat,
    Repeat,
}

impl BlobOp {
    pub fn name(self) -> &'static str {
        match self {
            BlobOp::OctetLength => "octet_length",
            BlobOp::Hex => "hex",
            BlobOp::Unhex => "unhex",
            BlobOp::ToBase64 => "to_base64",
            BlobOp::FromBase64 => "from_base64",
            BlobOp::Encode => "encode",
            BlobOp::Decode => "decode",
            BlobOp::Md5 => "md5",
            BlobOp::Sha256 => "sha256",
            BlobOp::Concat => "||",
            BlobOp::Repeat => "repeat",
        }
    }
}

/// A function of DOUBLEs from the math library (`ScalarFunction::Math`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MathOp {
    Log10,
    Log2,
    /// `log(base, x)`.
    LogBase,
    Cbrt,
    Sin,
    Cos,
    Tan,
    Cot,
    Asin,
    Acos,
    Atan,
    /// `atan2(y, x)`.
    Atan2,
    Sinh,
    Cosh,
    Tanh,
    Degrees,
    Radians,
    Gamma,
    Lgamma,
    /// Rounded away from zero to the next even whole number (DuckDB).
    Even,
    /// `nextafter(x, toward)`: the next DOUBLE after `x` in the direction of `toward`.
    NextAfter,
    Pi,
    /// `fdiv(a, b)`: the quotient rounded down; `fmod(a, b)`: C's remainder.
    FDiv,
    FMod,
    IsNan,
    IsInf,
    IsFinite,
    SignBit,
}

impl MathOp {
    pub fn name(self) -> &'static str {
        match self {
            MathOp::Log10 => "log10",
            MathOp::Log2 => "log2",
            MathOp::LogBase => "log",
            MathOp::Cbrt => "cbrt",
            MathOp::Sin => "sin",
            MathOp::Cos => "cos",
            MathOp::Tan => "tan",
            MathOp::Cot => "cot",
            MathOp::Asin => "asin",
            MathOp::Acos => "acos",
            MathOp::Atan => "atan",
            MathOp::Atan2 => "atan2",
            MathOp::Sinh => "sinh",
            MathOp::Cosh => "cosh",
            MathOp::Tanh => "tanh",
            MathOp::Degrees => "degrees",
            MathOp::Radians => "radians",
            MathOp::Gamma => "gamma",
            MathOp::Lgamma => "lgamma",
            MathOp::Even => "even",
            MathOp::NextAfter => "nextafter",
            MathOp::Pi => "pi",
            MathOp::FDiv => "fdiv",
            MathOp::FMod => "fmod",
            MathOp::IsNan => "isnan",
            MathOp::IsInf => "isinf",
            MathOp::IsFinite => "isfinite",
            MathOp::SignBit => "signbit",
        }
    }

    pub fn arity(self) -> usize {
        match self {
            MathOp::Pi => 0,
            MathOp::LogBase | MathOp::Atan2 | MathOp::NextAfter | MathOp::FDiv | MathOp::FMod => 2,
            _ => 1,
        }
    }

    /// Whether the function tests its argument (a BOOLEAN) rather than computing a DOUBLE.
    pub fn is_test(self) -> bool {
        matches!(
            self,
            MathOp::IsNan | MathOp::IsInf | MathOp::IsFinite | MathOp::SignBit
        )
    }
}

/// A text function beyond the core ones (`ScalarFunction::Text`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextOp {
    /// Edits (insertions, deletions, substitutions) from one string to the other.
    Levenshtein,
    /// As Levenshtein, adjacent transpositions counting as one edit (optimal string
    /// alignment).
    DamerauLevenshtein,
    /// Positions at which two strings of one length differ.
    Hamming,
    /// The Jaccard similarity of the two strings' sets of characters.
    Jaccard,
    EndsWith,
    Contains,
    /// `translate(s, from, to)`: each character of `from` replaced by the one at its place in
    /// `to`, or removed where `to` is shorter.
    Translate,
    /// `text GLOB pattern`: `*` any run of characters, `?` any one, `[a-z]` / `[!a-z]` one in
    /// (not in) a class, `\` the next character as it is; the whole text must match.
    Glob,
    /// `overlay(s PLACING r FROM start [FOR count])`: `count` characters of `s` from `start`
    /// (as many as `r` has, without a count) replaced by `r`.
    Overlay,
    Chr,
    Ascii,
    ConcatWs,
    /// `printf(format, ...)`: C's `%` specifiers.
    Printf,
    /// `format(format, ...)` (DuckDB): `{}` fields in the fmt library's form.
    Format,
    /// `bar(x, min, max, width)`.
    Bar,
    /// `format_bytes(n)` in powers of 1024, or of 1000 when `decimal`.
    FormatBytes {
        decimal: bool,
    },
    SplitRegex,
    /// `parse_formatted_bytes(s)`: `'1.5 KiB'` as 1536 bytes (DuckDB).
    ParseFormattedBytes,
    /// `to_char(timestamp, template)` (PostgreSQL).
    ToCharTime,
    /// `to_char(number, template)`, the number as a DOUBLE.
    ToCharNumber,
    /// `to_date(text, template)`.
    ToDate,
    /// `to_timestamp(text, template)`, a wall time.
    ToTimestamp,
    /// A LIKE pattern written with its own escape character (`ESCAPE e`, the second argument)
    /// rewritten to the backslash escapes the matcher reads.
    LikeEscape,
    RegexpEscape,
    UrlEncode,
    UrlDecode,
    /// `to_base(n, radix, length)`.
    ToBase,
    /// Substrings and lengths counted in grapheme clusters.
    SubstringGrapheme,
    LeftGrapheme,
    RightGrapheme,
    LengthGrapheme,
}

impl TextOp {
    pub fn name(self) -> &'static str {
        match self {
            TextOp::Levenshtein => "levenshtein",
            TextOp::DamerauLevenshtein => "damerau_levenshtein",
            TextOp::Hamming => "hamming",
            TextOp::Jaccard => "jaccard",
            TextOp::EndsWith => "ends_with",
            TextOp::Contains => "contains",
            TextOp::Translate => "translate",
            TextOp::Glob => "glob",
            TextOp::Overlay => "overlay",
            TextOp::Chr => "chr",
            TextOp::Ascii => "ascii",
            TextOp::ConcatWs => "concat_ws",
            TextOp::Printf => "printf",
            TextOp::Format => "format",
            TextOp::Bar => "bar",
            TextOp::FormatBytes { decimal: false } => "format_bytes",
            TextOp::FormatBytes { decimal: true } => "formatReadableDecimalSize",
            TextOp::SplitRegex => "string_split_regex",
            TextOp::ParseFormattedBytes => "parse_formatted_bytes",
            TextOp::LikeEscape => "like_escape",
            TextOp::ToCharTime | TextOp::ToCharNumber => "to_char",
            TextOp::ToDate => "to_date",
            TextOp::ToTimestamp => "to_timestamp",
            TextOp::RegexpEscape => "regexp_escape",
            TextOp::UrlEncode => "url_encode",
            TextOp::UrlDecode => "url_decode",
            TextOp::ToBase => "to_base",
            TextOp::SubstringGrapheme => "substring_grapheme",
            TextOp::LeftGrapheme => "left_grapheme",
            TextOp::RightGrapheme => "right_grapheme",
            TextOp::LengthGrapheme => "length_grapheme",
        }
    }
}

/// A list function over a list and, for some, a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListOp {
    /// `list_concat(a, b)`.
    Concat,
    /// `list_contains(l, x)`: a BOOLEAN.
    Contains,
    /// `list_position(l, x)`: a BIGINT place from 1.
    Position,
    Reverse,
    Sort {
        descending: bool,
        nulls_first: bool,
    },
    /// Each non-NULL value once.
    Distinct,
    /// `list_slice(x, begin, end, step)`, over lists or text.
    Slice,
    /// `list_select(l, places)`: the elements at the places.
    Select,
    /// `list_where(l, mask)`: the elements whose mask is true.
    Where,
    /// `list_resize(l, size, fill)`.
    Resize,
    /// A list of lists made one list.
    Flatten,
    /// Whether any / every non-NULL element of the second list is in the first.
    HasAny,
    HasAll,
    /// The first list's elements that the second has, each once.
    Intersect,
    /// `list_zip(l1, ..., truncate)`: the lists' elements side by side in unnamed structs.
    Zip,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BitwiseOp {
    And,
    Or,
    Xor,
    ShiftLeft,
    ShiftRight,
}

/// The parts of a date or timestamp EXTRACT can take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DatePart {
    Year,
    Quarter,
    Month,
    Week,
    Day,
    DayOfWeek,
    DayOfYear,
    Hour,
    Minute,
    Second,
    /// Seconds and their fraction, in milliseconds or microseconds, as DuckDB has them.
    Millisecond,
    Microsecond,
    /// Monday 1 to Sunday 7.
    IsoDayOfWeek,
    /// The year of the ISO week.
    IsoYear,
    Decade,
    Century,
    Millennium,
}

impl ScalarFunction {
    pub fn name(self) -> &'static str {
        match self {
            ScalarFunction::Coalesce => "coalesce",
            ScalarFunction::NullIf => "nullif",
            ScalarFunction::Abs => "abs",
            ScalarFunction::Lower => "lower",
            ScalarFunction::Upper => "upper",
            ScalarFunction::Length => "length",
            ScalarFunction::Round => "round",
            ScalarFunction::Substring => "substring",
            ScalarFunction::DatePart(_) => "date_part",
            ScalarFunction::Ceil => "ceil",
            ScalarFunction::Floor => "floor",
            ScalarFunction::Sqrt => "sqrt",
            ScalarFunction::Ln => "ln",
            ScalarFunction::Exp => "exp",
            ScalarFunction::Power => "power",
            ScalarFunction::Trim(..) => "trim",
            ScalarFunction::Replace => "replace",
            ScalarFunction::Concat => "concat",
            ScalarFunction::Position => "strpos",
            ScalarFunction::StartsWith => "starts_with",
            ScalarFunction::Left => "left",
            ScalarFunction::Right => "right",
            ScalarFunction::Reverse => "reverse",
            ScalarFunction::Repeat => "repeat",
            ScalarFunction::Pad { left: true } => "lpad",
            ScalarFunction::Pad { left: false } => "rpad",
            ScalarFunction::SplitPart => "split_part",
            ScalarFunction::TryCast => "try_cast",
            ScalarFunction::SortedQuantile { continuous: true } => "percentile_cont",
            ScalarFunction::SortedQuantile { continuous: false } => "percentile_disc",
            ScalarFunction::SortedMode => "mode",
            ScalarFunction::SortedTopK => "approx_top_k",
            ScalarFunction::ModeInOrder => "mode",
            ScalarFunction::SortedEntropy => "entropy",
            ScalarFunction::Random => "random",
            ScalarFunction::SortedMad => "mad",
            ScalarFunction::MomentStatistic(moment) => moment.name(),
            ScalarFunction::JsonGet { text: false } => "json_extract",
            ScalarFunction::JsonGet { text: true } => "json_extract_string",
            ScalarFunction::JsonCheck => "json",
            ScalarFunction::UuidText => "uuid",
            ScalarFunction::FiniteOnly => "finite_only",
            ScalarFunction::RandomUuid => "gen_random_uuid",
            ScalarFunction::MakeDate => "make_date",
            ScalarFunction::MakeTimestamp => "make_timestamp",
            ScalarFunction::Age => "age",
            ScalarFunction::LastDay => "last_day",
            ScalarFunction::IntervalOf(_) => "to_interval",
            ScalarFunction::TruncDigits => "trunc",
            ScalarFunction::RoundBankers => "roundbankers",
            ScalarFunction::Math(op) => op.name(),
            ScalarFunction::Text(op) => op.name(),
            ScalarFunction::Model(op) => op.name(),
            ScalarFunction::IntegerRange { .. } => "cast",
            ScalarFunction::Strftime => "strftime",
            ScalarFunction::RegexpExtract => "regexp_extract",
            ScalarFunction::StringSplit => "string_split",
            ScalarFunction::DistinctRuns => "array_distinct",
            ScalarFunction::Greatest => "greatest",
            ScalarFunction::Least => "least",
            ScalarFunction::DateTrunc(_) => "date_trunc",
            ScalarFunction::RegexpMatch(_) => "regexp_matches",
            ScalarFunction::RegexpReplace(..) => "regexp_replace",
            ScalarFunction::DateDiff(_) => "date_diff",
            ScalarFunction::DateSub(_) => "date_sub",
            ScalarFunction::RegexpExtractAll => "regexp_extract_all",
            ScalarFunction::TimeBucket => "time_bucket",
            ScalarFunction::BitFold(BitwiseOp::And) => "bit_and",
            ScalarFunction::BitFold(BitwiseOp::Or) => "bit_or",
            ScalarFunction::BitFold(_) => "bit_xor",
            ScalarFunction::List(op) => match op {
                ListOp::Concat => "list_concat",
                ListOp::Contains => "list_contains",
                ListOp::Position => "list_position",
                ListOp::Reverse => "list_reverse",
                ListOp::Sort { .. } => "list_sort",
                ListOp::Distinct => "list_distinct",
                ListOp::Slice => "list_slice",
                ListOp::Select => "list_select",
                ListOp::Where => "list_where",
                ListOp::Resize => "list_resize",
                ListOp::Flatten => "flatten",
                ListOp::HasAny => "list_has_any",
                ListOp::HasAll => "list_has_all",
                ListOp::Intersect => "list_intersect",
                ListOp::Zip => "list_zip",
            },
            ScalarFunction::Strptime { lenient: false, .. } => "strptime",
            ScalarFunction::Strptime { lenient: true, .. } => "try_strptime",
            ScalarFunction::ListAggregate(_) => "list_aggregate",
            ScalarFunction::Bitwise(op) => match op {
                BitwiseOp::And => "&",
                BitwiseOp::Or => "|",
                BitwiseOp::Xor => "#",
                BitwiseOp::ShiftLeft => "<<",
                BitwiseOp::ShiftRight => ">>",
            },
            ScalarFunction::MakeArray => "array",
            ScalarFunction::ArrayElement => "array_element",
            ScalarFunction::ArrayLength => "array_length",
            ScalarFunction::Cardinality => "cardinality",
            ScalarFunction::VectorDistance(distance) => distance.name(),
            ScalarFunction::ArrayToString => "array_to_string",
            ScalarFunction::Quantified { all: false, .. } => "any",
            ScalarFunction::Quantified { all: true, .. } => "all",
            ScalarFunction::KeyHash => "key_hash",
            ScalarFunction::Series { inclusive: true } => "generate_series",
            ScalarFunction::Series { inclusive: false } => "range",
            ScalarFunction::TimeSeries { inclusive: true } => "generate_series",
            ScalarFunction::TimeSeries { inclusive: false } => "range",
            ScalarFunction::ExpandArray => "_pg_expandarray",
            ScalarFunction::Field(_) => "field",
            ScalarFunction::MakeStruct => "struct_pack",
            ScalarFunction::RaiseError => "error",
            ScalarFunction::TimeArithmetic { subtract: false } => "+",
            ScalarFunction::TimeArithmetic { subtract: true } => "-",
            ScalarFunction::MakeMap => "map",
            ScalarFunction::Blob(op) => op.name(),
            ScalarFunction::Interval(op) => match op {
                IntervalOp::Part(_) => "date_part",
                IntervalOp::Epoch => "epoch",
                IntervalOp::EpochUnits { .. } => "epoch_us",
                IntervalOp::Nanosecond => "nanosecond",
                IntervalOp::Trunc(_) => "date_trunc",
                IntervalOp::Scale { divide: false } => "*",
                IntervalOp::Scale { divide: true } => "/",
            },
            ScalarFunction::Map(op) => match op {
                MapOp::FromLists => "map",
                MapOp::FromEntries => "map_from_entries",
                MapOp::Keys => "map_keys",
                MapOp::Values => "map_values",
                MapOp::Entries => "map_entries",
                MapOp::Element => "map_extract_value",
                MapOp::Extract => "map_extract",
                MapOp::Contains => "map_contains",
                MapOp::Cardinality => "cardinality",
                MapOp::Histogram | MapOp::Bins => "histogram",
                MapOp::ExactBins => "histogram_exact",
                MapOp::IsOtherBin => "is_histogram_other_bin",
            },
            ScalarFunction::RegexpGroups { all: false, .. } => "regexp_extract",
            ScalarFunction::RegexpGroups { all: true, .. } => "regexp_extract_all",
            ScalarFunction::InjectedPanic => "pondra_panic",
            ScalarFunction::Json(op) => op.name(),
        }
    }
}

impl Expr {
    /// Sets `used[i]` for each column `i` the expression reads (indexes past `used` are
    /// another input's and are skipped).
    pub fn mark_columns(&self, used: &mut [bool]) {
        self.visit(&mut |e| {
            if let Expr::Column { index, .. } = e
                && let Some(slot) = used.get_mut(*index)
            {
                *slot = true;
            }
        });
    }

    /// A column reference to each field of `schema`, in order.
    pub fn columns_of(schema: &arrow::datatypes::Schema) -> Vec<Expr> {
        (0..schema.fields().len())
            .map(|i| Expr::column_of(schema, i))
            .collect()
    }

    /// The column at `index` of `schema`, named and typed as it is there.
    pub fn column_of(schema: &arrow::datatypes::Schema, index: usize) -> Expr {
        let field = schema.field(index);
        Expr::column(index, field.name(), field.data_type().clone())
    }

    /// The same expression with every child replaced by `f(child)`.
    pub fn map_children(&self, f: &mut dyn FnMut(&Expr) -> Expr) -> Expr {
        let mut boxed = |e: &Expr| Box::new(f(e));
        match self {
            Expr::Column { .. }
            | Expr::Literal(_)
            | Expr::OuterColumn { .. }
            | Expr::DeepOuterColumn(_)
            | Expr::ScalarSubquery(_) => self.clone(),
            Expr::Python(call) => Expr::Python(Box::new(PythonCall {
                function: call.function.clone(),
                args: call.args.iter().map(&mut *f).collect(),
            })),
            Expr::Lambda(lambda) => Expr::Lambda(Box::new(Lambda {
                list: f(&lambda.list),
                initial: lambda.initial.as_ref().map(&mut *f),
                captured: lambda.captured.iter().map(&mut *f).collect(),
                ..(**lambda).clone()
            })),
            Expr::Binary { op, left, right } => Expr::Binary {
                op: *op,
                left: boxed(left),
                right: boxed(right),
            },
            Expr::Not(e) => Expr::Not(boxed(e)),
            Expr::Negative(e) => Expr::Negative(boxed(e)),
            Expr::IsNull(e) => Expr::IsNull(boxed(e)),
            Expr::IsNotNull(e) => Expr::IsNotNull(boxed(e)),
            Expr::Cast { expr, data_type } => Expr::Cast {
                expr: boxed(expr),
                data_type: data_type.clone(),
            },
            Expr::Case {
                branches,
                otherwise,
                data_type,
            } => Expr::Case {
                branches: branches.iter().map(|(w, t)| (f(w), f(t))).collect(),
                otherwise: otherwise.as_ref().map(|e| Box::new(f(e))),
                data_type: data_type.clone(),
            },
            Expr::InList {
                expr,
                list,
                negated,
            } => Expr::InList {
                expr: Box::new(f(expr)),
                list: list.iter().map(&mut *f).collect(),
                negated: *negated,
            },
            Expr::Like {
                expr,
                pattern,
                negated,
                case_insensitive,
            } => Expr::Like {
                expr: Box::new(f(expr)),
                pattern: Box::new(f(pattern)),
                negated: *negated,
                case_insensitive: *case_insensitive,
            },
            Expr::Function {
                func,
                args,
                data_type,
            } => Expr::Function {
                func: *func,
                args: args.iter().map(&mut *f).collect(),
                data_type: data_type.clone(),
            },
        }
    }

    /// The expression with each column index `i` replaced by `map(i)`.
    pub fn remap_columns(&self, map: &dyn Fn(usize) -> usize) -> Expr {
        match self {
            Expr::Column {
                index,
                name,
                data_type,
            } => Expr::Column {
                index: map(*index),
                name: name.clone(),
                data_type: data_type.clone(),
            },
            other => other.map_children(&mut |e| e.remap_columns(map)),
        }
    }

    /// True when `pred` holds for this expression or any expression inside it.
    pub fn any(&self, pred: &dyn Fn(&Expr) -> bool) -> bool {
        self.exists(&mut |e| pred(e))
    }

    /// True when the expression reads a column of an enclosing query.
    pub fn has_outer(&self) -> bool {
        self.any(&|e| matches!(e, Expr::OuterColumn { .. }))
    }

    /// True when the expression reads a column of any query around it, however far out.
    pub fn has_any_outer(&self) -> bool {
        self.any(&|e| matches!(e, Expr::OuterColumn { .. } | Expr::DeepOuterColumn(_)))
    }

    /// Every column index the expression reads.
    pub fn column_indices(&self) -> Vec<usize> {
        let mut out = Vec::new();
        self.collect_columns(&mut out);
        out.sort_unstable();
        out.dedup();
        out
    }

    fn collect_columns(&self, out: &mut Vec<usize>) {
        self.visit(&mut |e| {
            if let Expr::Column { index, .. } = e {
                out.push(*index);
            }
        });
    }

    /// Splits a predicate into its AND-ed parts.
    pub fn conjuncts(self) -> Vec<Expr> {
        match self {
            Expr::Binary {
                op: BinaryOp::And,
                left,
                right,
            } => {
                let mut parts = left.conjuncts();
                parts.extend(right.conjuncts());
                parts
            }
            other => vec![other],
        }
    }

    /// ANDs predicates together; `None` for none.
    pub fn and_all(parts: Vec<Expr>) -> Option<Expr> {
        parts.into_iter().reduce(|l, r| Expr::Binary {
            op: BinaryOp::And,
            left: Box::new(l),
            right: Box::new(r),
        })
    }

    /// The type of the values this expression produces.
    pub fn data_type(&self) -> DataType {
        match self {
            Expr::Column { data_type, .. } | Expr::OuterColumn { data_type, .. } => {
                data_type.clone()
            }
            Expr::DeepOuterColumn(column) => column.data_type.clone(),
            Expr::ScalarSubquery(subquery) => subquery.plan.schema().field(0).data_type().clone(),
            Expr::Literal(value) => value.data_type(),
            Expr::Binary { op, left, .. } => {
                if op.is_comparison() || matches!(op, BinaryOp::And | BinaryOp::Or) {
                    DataType::Boolean
                } else if *op == BinaryOp::Concat {
                    DataType::Utf8
                } else {
                    // The binder casts both operands to the result type before the operation,
                    // except for decimal products and quotients, typed by their cast.
                    left.data_type()
                }
            }
            Expr::Not(_) | Expr::IsNull(_) | Expr::IsNotNull(_) => DataType::Boolean,
            Expr::InList { .. } | Expr::Like { .. } => DataType::Boolean,
            Expr::Negative(inner) => inner.data_type(),
            Expr::Cast { data_type, .. }
            | Expr::Case { data_type, .. }
            | Expr::Function { data_type, .. } => data_type.clone(),
            Expr::Lambda(lambda) => lambda.data_type.clone(),
            Expr::Python(call) => call.function.returns.clone(),
        }
    }

    pub fn column(index: usize, name: impl Into<String>, data_type: DataType) -> Expr {
        Expr::Column {
            index,
            name: name.into(),
            data_type,
        }
    }

    pub fn cast(self, data_type: &DataType) -> Expr {
        if &self.data_type() == data_type {
            self
        } else {
            Expr::Cast {
                expr: Box::new(self),
                data_type: data_type.clone(),
            }
        }
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Column { name, index, .. } => write!(f, "{name}#{index}"),
            Expr::OuterColumn { name, index, .. } => write!(f, "outer.{name}#{index}"),
            Expr::DeepOuterColumn(c) => write!(f, "outer{}.{}#{}", c.depth, c.name, c.index),
            Expr::ScalarSubquery(_) => write!(f, "(subquery)"),
            Expr::Python(call) => {
                let args: Vec<String> = call.args.iter().map(ToString::to_string).collect();
                write!(f, "{}({})", call.function.name, args.join(", "))
            }
            Expr::Lambda(lambda) => {
                write!(f, "{}({}, ", lambda.op.name(), lambda.list)?;
                if let Some(initial) = &lambda.initial {
                    write!(f, "{initial}, ")?;
                }
                write!(f, "lambda: {}", lambda.body)?;
                for captured in &lambda.captured {
                    write!(f, ", {captured}")?;
                }
                write!(f, ")")
            }
            Expr::Literal(value) => write!(f, "{value}"),
            Expr::Binary { op, left, right } => write!(f, "({left} {} {right})", op.symbol()),
            Expr::Not(e) => write!(f, "NOT {e}"),
            Expr::Negative(e) => write!(f, "-{e}"),
            Expr::IsNull(e) => write!(f, "{e} IS NULL"),
            Expr::IsNotNull(e) => write!(f, "{e} IS NOT NULL"),
            Expr::Cast { expr, data_type } => write!(f, "CAST({expr} AS {data_type})"),
            Expr::Case {
                branches,
                otherwise,
                ..
            } => {
                write!(f, "CASE")?;
                for (when, then) in branches {
                    write!(f, " WHEN {when} THEN {then}")?;
                }
                if let Some(e) = otherwise {
                    write!(f, " ELSE {e}")?;
                }
                write!(f, " END")
            }
            Expr::InList {
                expr,
                list,
                negated,
            } => {
                let items: Vec<String> = list.iter().map(|e| e.to_string()).collect();
                let not = if *negated { "NOT " } else { "" };
                write!(f, "{expr} {not}IN ({})", items.join(", "))
            }
            Expr::Like {
                expr,
                pattern,
                negated,
                case_insensitive,
            } => {
                let not = if *negated { "NOT " } else { "" };
                let op = if *case_insensitive { "ILIKE" } else { "LIKE" };
                write!(f, "{expr} {not}{op} {pattern}")
            }
            Expr::Function { func, args, .. } => {
                let args: Vec<String> = args.iter().map(|e| e.to_string()).collect();
                write!(f, "{}({})", func.name(), args.join(", "))
            }
        }
    }
}

/// A column of a query two or more levels out (`Expr::DeepOuterColumn`).
#[derive(Clone, Debug, PartialEq)]
pub struct DeepColumn {
    /// 2 for the enclosing query's enclosing query, and so on.
    pub depth: usize,
    pub index: usize,
    pub name: String,
    pub data_type: DataType,
}

/// Aggregate functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AggregateFunction {
    CountStar,
    Count,
    /// `count(DISTINCT x)`.
    CountDistinct,
    /// `sum(DISTINCT x)`, `avg(DISTINCT x)`.
    SumDistinct,
    AvgDistinct,
    /// Standard deviation and variance, of a sample or of the population.
    StddevSamp,
    StddevPop,
    VarSamp,
    VarPop,
    Sum,
    Min,
    Max,
    Avg,
    /// `string_agg(x, separator)`: the non-NULL values joined, in input order.
    StringAgg,
    /// `array_agg(x)`: the values, NULLs included, as an array; NULL over no rows.
    ArrayAgg,
    StringAggDistinct,
    /// Which grouping set a row of a GROUPING SETS / ROLLUP / CUBE aggregation comes from: bit
    /// k is set when group key k is not grouped by. Each grouping set's aggregation fills it in;
    /// a plain GROUP BY groups by every key, so it is 0 there. `GROUPING(...)` reads it.
    GroupingId,
    /// `product(x)` (DuckDB): the product of the values as DOUBLE.
    Product,
    /// `fsum(x)`, `kahan_sum`, `sumKahan` (DuckDB): a DOUBLE sum with compensation, which
    /// keeps the small values a large running sum would round away.
    KahanSum,
}

impl AggregateFunction {
    pub fn name(self) -> &'static str {
        match self {
            AggregateFunction::CountStar
            | AggregateFunction::Count
            | AggregateFunction::CountDistinct => "count",
            AggregateFunction::Sum => "sum",
            AggregateFunction::Min => "min",
            AggregateFunction::Max => "max",
            AggregateFunction::Avg => "avg",
            AggregateFunction::SumDistinct => "sum",
            AggregateFunction::StringAgg | AggregateFunction::StringAggDistinct => "string_agg",
            AggregateFunction::ArrayAgg => "array_agg",
            AggregateFunction::GroupingId => "grouping_id",
            AggregateFunction::Product => "product",
            AggregateFunction::KahanSum => "fsum",
            AggregateFunction::AvgDistinct => "avg",
            AggregateFunction::StddevSamp => "stddev_samp",
            AggregateFunction::StddevPop => "stddev_pop",
            AggregateFunction::VarSamp => "var_samp",
            AggregateFunction::VarPop => "var_pop",
        }
    }

    /// The result type for an argument of type `arg`.
    pub fn result_type(self, arg: Option<&DataType>) -> DataType {
        match (self, arg) {
            (
                AggregateFunction::CountStar
                | AggregateFunction::Count
                | AggregateFunction::CountDistinct,
                _,
            ) => DataType::Int64,
            (
                AggregateFunction::Avg
                | AggregateFunction::AvgDistinct
                | AggregateFunction::StddevSamp
                | AggregateFunction::StddevPop
                | AggregateFunction::VarSamp
                | AggregateFunction::VarPop,
                _,
            ) => DataType::Float64,
            (
                AggregateFunction::Sum | AggregateFunction::SumDistinct,
                Some(DataType::Int32 | DataType::Int64),
            ) => DataType::Int64,
            (
                AggregateFunction::Sum | AggregateFunction::SumDistinct,
                Some(DataType::Decimal64(_, s) | DataType::Decimal128(_, s)),
            ) => DataType::Decimal128(38, *s),
            (AggregateFunction::StringAgg | AggregateFunction::StringAggDistinct, _) => {
                DataType::Utf8
            }
            (AggregateFunction::GroupingId, _) => DataType::Int64,
            (AggregateFunction::Product | AggregateFunction::KahanSum, _) => DataType::Float64,
            (AggregateFunction::ArrayAgg, arg) => DataType::List(std::sync::Arc::new(
                arrow::datatypes::Field::new("item", arg.cloned().unwrap_or(DataType::Null), true),
            )),
            (_, Some(t)) => t.clone(),
            (_, None) => DataType::Null,
        }
    }
}

/// One aggregate in an aggregation: a function over an argument of the aggregation's input.
#[derive(Clone, Debug, PartialEq)]
pub struct AggregateCall {
    pub func: AggregateFunction,
    pub arg: Option<Expr>,
    pub data_type: DataType,
    /// `string_agg`'s separator, a constant; `None` for every other function.
    pub separator: Option<String>,
    /// `agg(x ORDER BY k)`: the order the values are taken in, for the functions it matters
    /// to (`array_agg`, `string_agg`); empty for input order.
    pub order: Vec<SortKey>,
    /// Only the rows where this is true are aggregated (`FILTER (WHERE ...)`). Set where a
    /// CASE around the argument cannot say it: `array_agg` keeps NULL values.
    pub filter: Option<Expr>,
}

impl AggregateCall {
    /// `func` over `arg` (none for `count(*)`), typed by the function, with no order,
    /// separator or filter.
    pub fn new(func: AggregateFunction, arg: Option<Expr>) -> AggregateCall {
        AggregateCall {
            func,
            data_type: func.result_type(arg.as_ref().map(|a| a.data_type()).as_ref()),
            arg,
            separator: None,
            order: Vec::new(),
            filter: None,
        }
    }
}

impl AggregateCall {
    /// The expressions over the aggregation's input: the argument, the ORDER BY keys, the
    /// filter.
    pub fn exprs(&self) -> impl Iterator<Item = &Expr> {
        self.arg
            .iter()
            .chain(self.order.iter().map(|k| &k.expr))
            .chain(&self.filter)
    }

    /// The same call with `f` applied to each expression over the input.
    pub fn map_exprs(&self, f: &mut dyn FnMut(&Expr) -> Expr) -> AggregateCall {
        AggregateCall {
            arg: self.arg.as_ref().map(&mut *f),
            order: self
                .order
                .iter()
                .map(|k| SortKey {
                    expr: f(&k.expr),
                    ..k.clone()
                })
                .collect(),
            filter: self.filter.as_ref().map(&mut *f),
            ..self.clone()
        }
    }
}

impl fmt::Display for AggregateCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.arg {
            Some(arg)
                if matches!(
                    self.func,
                    AggregateFunction::CountDistinct
                        | AggregateFunction::SumDistinct
                        | AggregateFunction::AvgDistinct
                        | AggregateFunction::StringAggDistinct
                ) =>
            {
                write!(f, "{}(DISTINCT {arg}", self.func.name())?;
                match &self.separator {
                    Some(separator) => write!(f, ", '{separator}')"),
                    None => write!(f, ")"),
                }
            }
            Some(arg) if self.separator.is_some() => {
                let separator = self.separator.as_deref().unwrap_or_default();
                write!(f, "{}({arg}, '{separator}'", self.func.name())?;
                self.fmt_order(f)
            }
            Some(arg) => {
                write!(f, "{}({arg}", self.func.name())?;
                self.fmt_order(f)
            }
            None => write!(f, "{}(*)", self.func.name()),
        }
    }
}

impl AggregateCall {
    fn fmt_order(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, key) in self.order.iter().enumerate() {
            let lead = if i == 0 { " ORDER BY " } else { ", " };
            let direction = if key.descending { " DESC" } else { "" };
            write!(f, "{lead}{}{direction}", key.expr)?;
        }
        write!(f, ")")
    }
}

/// A window function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowFunction {
    RowNumber,
    Rank,
    DenseRank,
    /// `(rank - 1) / (rows in the partition - 1)`, 0 in a partition of one row.
    PercentRank,
    /// The share of the partition's rows up to the current row's last peer.
    CumeDist,
    /// `ntile(n)`: the rows split into `n` buckets numbered from 1, in order, the first
    /// buckets one row larger than the last when the rows do not divide evenly.
    Ntile,
    /// The value `offset` rows before (`Lag`) or after (`Lead`) in the partition.
    Lag,
    Lead,
    /// The value at the frame's first row, its last, or its `n`th (`args`: value, `n`).
    FirstValue,
    LastValue,
    NthValue,
    /// `fill(x)` (DuckDB): a NULL value replaced by the line through the nearest values
    /// around it in the order (or the two nearest on its one side), read at its order key.
    Fill,
    /// An aggregate over the window frame.
    Aggregate(AggregateFunction),
}

impl WindowFunction {
    /// Whether the function reads the frame; the others see the whole partition.
    pub fn uses_frame(self) -> bool {
        matches!(
            self,
            WindowFunction::FirstValue
                | WindowFunction::LastValue
                | WindowFunction::NthValue
                | WindowFunction::Aggregate(_)
        )
    }
}

/// What a frame's offsets count: rows, values of the ORDER BY key, or peer groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameUnits {
    Rows,
    /// The frame holds the rows whose key lies within the offsets of the current row's; its
    /// CURRENT ROW takes in every peer (row with equal ORDER BY keys).
    Range,
    /// Offsets count peer groups; CURRENT ROW is the current row's peer group.
    Groups,
}

/// How far a frame bound lies from the current row.
#[derive(Clone, Debug, PartialEq)]
pub enum FrameOffset {
    /// A number of rows (ROWS) or peer groups (GROUPS).
    Count(u64),
    /// A distance from the current row's ORDER BY key (RANGE): a non-negative number for a
    /// numeric key, an interval for a date or a timestamp.
    Distance(ScalarValue),
}

/// Where a window frame starts or ends.
#[derive(Clone, Debug, PartialEq)]
pub enum FrameBound {
    UnboundedPreceding,
    Preceding(FrameOffset),
    CurrentRow,
    Following(FrameOffset),
    UnboundedFollowing,
}

/// The rows a frame leaves out of itself (`EXCLUDE ...`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameExclusion {
    NoOthers,
    CurrentRow,
    /// The current row and its peers.
    Group,
    /// The current row's peers, not the row itself.
    Ties,
}

/// The rows of a partition a frame-reading window function sees.
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    pub units: FrameUnits,
    pub start: FrameBound,
    pub end: FrameBound,
    pub exclude: FrameExclusion,
}

impl Frame {
    /// A ROWS frame that excludes nothing.
    pub fn rows(start: FrameBound, end: FrameBound) -> Frame {
        Frame {
            units: FrameUnits::Rows,
            start,
            end,
            exclude: FrameExclusion::NoOthers,
        }
    }

    /// A RANGE frame that excludes nothing.
    pub fn range(start: FrameBound, end: FrameBound) -> Frame {
        Frame {
            units: FrameUnits::Range,
            start,
            end,
            exclude: FrameExclusion::NoOthers,
        }
    }
}

/// A window function call: `func(args) OVER (PARTITION BY ... ORDER BY ... frame)`.
#[derive(Clone, Debug, PartialEq)]
pub struct WindowExpr {
    pub func: WindowFunction,
    pub args: Vec<Expr>,
    pub partition_by: Vec<Expr>,
    pub order_by: Vec<SortKey>,
    pub frame: Frame,
    pub data_type: DataType,
    /// `IGNORE NULLS` (lag, lead, first_value, last_value, nth_value): rows whose value is
    /// NULL are passed over, as if the partition did not hold them.
    pub ignore_nulls: bool,
}

/// One key of an ORDER BY.
#[derive(Clone, Debug, PartialEq)]
pub struct SortKey {
    pub expr: Expr,
    pub descending: bool,
    pub nulls_first: bool,
}
