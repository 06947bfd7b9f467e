//! DuckDB's session variables: `SET VARIABLE name = expr` and `RESET VARIABLE name`, which
//! sqlparser reads as a setting named `VARIABLE`. The value is kept as the query
//! `SELECT expr`, which the session runs once to store the value `getvariable('name')` gives.

use sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace};

use crate::tokens::is_word_token;
use crate::{ParseError, Statement};

/// What a statement's tokens say of variables.
pub(crate) enum Assignment {
    /// Not a variable's statement: the tokens, untouched.
    Other(Vec<TokenWithSpan>),
    /// `RESET VARIABLE name`.
    Reset(String),
    /// `SET VARIABLE name = expr`: the name, and the tokens of `SELECT expr`.
    Set(String, Vec<TokenWithSpan>),
}

/// Reads `SET VARIABLE` and `RESET VARIABLE` (see the module's comment).
pub(crate) fn assignment(tokens: Vec<TokenWithSpan>) -> Result<Assignment, ParseError> {
    let solid: Vec<usize> = (0..tokens.len())
        .filter(|&i| !matches!(tokens[i].token, Token::Whitespace(_) | Token::SemiColon))
        .collect();
    let [verb, variable, rest @ ..] = solid.as_slice() else {
        return Ok(Assignment::Other(tokens));
    };
    let reset = is_word_token(&tokens[*verb].token, "RESET");
    let names_variable = is_word_token(&tokens[*variable].token, "VARIABLE");
    if !(reset || is_word_token(&tokens[*verb].token, "SET")) || !names_variable {
        return Ok(Assignment::Other(tokens));
    }
    let Some((Token::Word(word), rest)) = rest.split_first().map(|(n, r)| (&tokens[*n].token, r))
    else {
        return Err(ParseError::Syntax("SET VARIABLE needs a name".into()));
    };
    let name = match word.quote_style {
        Some(_) => word.value.clone(),
        None => word.value.to_lowercase(),
    };
    if reset {
        return match rest {
            [] => Ok(Assignment::Reset(name)),
            _ => Err(ParseError::Syntax(
                "RESET VARIABLE takes a name only".into(),
            )),
        };
    }
    let assign = rest
        .first()
        .filter(|&&a| tokens[a].token == Token::Eq || is_word_token(&tokens[a].token, "TO"));
    let Some(&assign) = assign.filter(|_| rest.len() > 1) else {
        return Err(ParseError::Syntax(format!(
            "SET VARIABLE {name} needs = and a value"
        )));
    };
    let mut select = vec![
        TokenWithSpan::wrap(Token::make_keyword("SELECT")),
        TokenWithSpan::wrap(Token::Whitespace(Whitespace::Space)),
    ];
    select.extend(tokens.into_iter().skip(assign + 1));
    Ok(Assignment::Set(name, select))
}

/// The statement setting `name` to the value of `select`, which `SELECT expr` parsed to.
pub(crate) fn set_variable(name: String, select: Statement) -> Result<Statement, ParseError> {
    match select {
        Statement::Sql(sql) => match *sql {
            sqlparser::ast::Statement::Query(query) => Ok(Statement::SetVariable {
                name,
                value: Some(query),
            }),
            _ => Err(ParseError::Syntax(
                "SET VARIABLE takes an expression".into(),
            )),
        },
        _ => Err(ParseError::Syntax(
            "SET VARIABLE takes an expression".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use crate::{Statement, parse_sql};

    #[test]
    fn variables_are_set_and_reset() {
        let parsed = parse_sql("SET VARIABLE My_Var = 1 + 2").unwrap();
        let Statement::SetVariable {
            name,
            value: Some(query),
        } = &parsed[0].statement
        else {
            panic!("not a variable: {:?}", parsed[0].statement);
        };
        assert_eq!(name, "my_var");
        assert_eq!(query.to_string(), "SELECT 1 + 2");
        let parsed = parse_sql("RESET VARIABLE x").unwrap();
        assert!(matches!(
            &parsed[0].statement,
            Statement::SetVariable { value: None, .. }
        ));
        assert!(parse_sql("SET VARIABLE x").is_err());
        // Other settings are left to sqlparser.
        let parsed = parse_sql("SET threads = 1").unwrap();
        assert!(matches!(&parsed[0].statement, Statement::Sql(_)));
    }
}
