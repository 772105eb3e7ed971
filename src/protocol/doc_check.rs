//! Keeps PROTOCOL.md and the code from drifting: its api-key and error-code tables are
//! parsed and compared with the enums.

#[cfg(test)]
mod tests {
    use crate::protocol::{ApiKey, ErrorCode};

    fn table_rows<'a>(doc: &'a str, heading: &str) -> Vec<Vec<&'a str>> {
        let section = doc.split(heading).nth(1).expect("section exists");
        section
            .lines()
            .skip_while(|l| !l.starts_with('|'))
            .take_while(|l| l.starts_with('|'))
            .skip(2)
            .map(|l| {
                l.split('|')
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .collect()
            })
            .collect()
    }

    #[test]
    fn protocol_doc_matches_code() {
        let doc = include_str!("../../PROTOCOL.md");
        let apis = table_rows(doc, "## API keys");
        assert_eq!(apis.len(), ApiKey::ALL.len());
        for row in apis {
            let key = ApiKey::from_i16(row[0].parse().unwrap()).expect("documented key exists");
            assert_eq!(format!("{key:?}"), row[1]);
            assert_eq!(row[2], key.versions().1.to_string());
        }
        let codes = table_rows(doc, "## Error codes");
        assert_eq!(codes.len(), ErrorCode::ALL.len());
        for row in codes {
            let code =
                ErrorCode::from_i16(row[0].parse().unwrap()).expect("documented code exists");
            assert_eq!(format!("{code:?}"), row[1]);
        }
    }
}
