//! Integer type names narrower or wider than the widths values are kept in (ADR 0060).
//!
//! TINYINT and SMALLINT are kept as INTEGER, UTINYINT and USMALLINT as INTEGER, UINTEGER as
//! BIGINT, and UBIGINT, HUGEINT and UHUGEINT as DECIMAL(38,0). A CAST to one of these names
//! checks the name's range, so `CAST(-1 AS UTINYINT)` is an error (NULL under TRY_CAST) as in
//! DuckDB, while arithmetic on the values runs in the width they are kept in.

use pondra_catalog::SqlType;
use sqlparser::ast;

/// An integer type whose range differs from the width its values are kept in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntegerDomain {
    TinyInt,
    SmallInt,
    UTinyInt,
    USmallInt,
    UInteger,
    UBigInt,
    HugeInt,
    UHugeInt,
}

/// DECIMAL(38,0): the widest integer values the engine keeps.
const WIDE_INTEGER: SqlType = SqlType::Decimal {
    precision: 38,
    scale: 0,
};

/// The largest value of DECIMAL(38,0), which bounds HUGEINT and UHUGEINT here (their full
/// ranges reach 1.7e38 and 3.4e38).
const WIDE_MAX: i128 = 10i128.pow(38) - 1;

impl IntegerDomain {
    /// The domain a type name denotes, if it is one of these.
    pub fn of(data_type: &ast::DataType) -> Option<IntegerDomain> {
        use ast::DataType as D;
        Some(match data_type {
            D::TinyInt(_) => IntegerDomain::TinyInt,
            D::SmallInt(_) | D::Int2(_) => IntegerDomain::SmallInt,
            D::UTinyInt | D::TinyIntUnsigned(_) | D::UInt8 => IntegerDomain::UTinyInt,
            D::USmallInt | D::SmallIntUnsigned(_) | D::Int2Unsigned(_) | D::UInt16 => {
                IntegerDomain::USmallInt
            }
            D::IntUnsigned(_) | D::Int4Unsigned(_) | D::IntegerUnsigned(_) | D::UInt32 => {
                IntegerDomain::UInteger
            }
            D::UBigInt | D::BigIntUnsigned(_) | D::Int8Unsigned(_) | D::UInt64 => {
                IntegerDomain::UBigInt
            }
            D::HugeInt | D::Int128 => IntegerDomain::HugeInt,
            D::UHugeInt | D::UInt128 => IntegerDomain::UHugeInt,
            D::Custom(name, modifiers) if modifiers.is_empty() => {
                let last = name.0.last()?.as_ident()?.value.to_lowercase();
                IntegerDomain::named(&last)?
            }
            _ => return None,
        })
    }

    /// DuckDB's spellings that sqlparser leaves as custom names.
    fn named(name: &str) -> Option<IntegerDomain> {
        Some(match name {
            "int1" => IntegerDomain::TinyInt,
            "int2" | "short" => IntegerDomain::SmallInt,
            "utinyint" => IntegerDomain::UTinyInt,
            "usmallint" => IntegerDomain::USmallInt,
            "uinteger" | "uint" => IntegerDomain::UInteger,
            "ubigint" => IntegerDomain::UBigInt,
            "hugeint" => IntegerDomain::HugeInt,
            "uhugeint" => IntegerDomain::UHugeInt,
            _ => return None,
        })
    }

    /// The type values of the domain are kept in.
    pub fn kept_as(self) -> SqlType {
        match self {
            IntegerDomain::TinyInt
            | IntegerDomain::SmallInt
            | IntegerDomain::UTinyInt
            | IntegerDomain::USmallInt => SqlType::Int,
            IntegerDomain::UInteger => SqlType::BigInt,
            IntegerDomain::UBigInt | IntegerDomain::HugeInt | IntegerDomain::UHugeInt => {
                WIDE_INTEGER
            }
        }
    }

    /// The smallest and largest values of the domain.
    pub fn bounds(self) -> (i128, i128) {
        match self {
            IntegerDomain::TinyInt => (i8::MIN as i128, i8::MAX as i128),
            IntegerDomain::SmallInt => (i16::MIN as i128, i16::MAX as i128),
            IntegerDomain::UTinyInt => (0, u8::MAX as i128),
            IntegerDomain::USmallInt => (0, u16::MAX as i128),
            IntegerDomain::UInteger => (0, u32::MAX as i128),
            IntegerDomain::UBigInt => (0, u64::MAX as i128),
            IntegerDomain::HugeInt => (-WIDE_MAX, WIDE_MAX),
            IntegerDomain::UHugeInt => (0, WIDE_MAX),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            IntegerDomain::TinyInt => "TINYINT",
            IntegerDomain::SmallInt => "SMALLINT",
            IntegerDomain::UTinyInt => "UTINYINT",
            IntegerDomain::USmallInt => "USMALLINT",
            IntegerDomain::UInteger => "UINTEGER",
            IntegerDomain::UBigInt => "UBIGINT",
            IntegerDomain::HugeInt => "HUGEINT",
            IntegerDomain::UHugeInt => "UHUGEINT",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_fit_the_width_values_are_kept_in() {
        for domain in [
            IntegerDomain::TinyInt,
            IntegerDomain::SmallInt,
            IntegerDomain::UTinyInt,
            IntegerDomain::USmallInt,
            IntegerDomain::UInteger,
            IntegerDomain::UBigInt,
            IntegerDomain::HugeInt,
            IntegerDomain::UHugeInt,
        ] {
            let (low, high) = domain.bounds();
            let (kept_low, kept_high) = match domain.kept_as() {
                SqlType::Int => (i32::MIN as i128, i32::MAX as i128),
                SqlType::BigInt => (i64::MIN as i128, i64::MAX as i128),
                _ => (-WIDE_MAX, WIDE_MAX),
            };
            assert!(kept_low <= low && high <= kept_high, "{}", domain.name());
        }
    }
}
