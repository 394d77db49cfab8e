// Aligned text tables for jalctl's human output.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace jal::ctl {

class Table {
public:
    enum class Align { left, right };
    struct Column {
        std::string header;
        Align align = Align::left;
    };

    explicit Table(std::vector<Column> columns);

    // Missing trailing cells print empty; extra cells are an error.
    void add_row(std::vector<std::string> cells);
    size_t rows() const { return rows_.size(); }

    // Header, then rows; columns separated by two spaces, no trailing blanks.
    void print(std::ostream& out) const;

private:
    std::vector<Column> columns_;
    std::vector<std::vector<std::string>> rows_;
};

// Two-column "name  value" listing (info, telemetry).
class KeyValueList {
public:
    void add(std::string key, std::string value);
    void print(std::ostream& out) const;

private:
    std::vector<std::pair<std::string, std::string>> items_;
};

}  // namespace jal::ctl
