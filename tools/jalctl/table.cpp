#include "table.hpp"

#include <algorithm>
#include <stdexcept>

namespace jal::ctl {

namespace {
// Display width: count code points, not bytes, so "°C" lines up.
size_t display_width(const std::string& s)
{
    return static_cast<size_t>(
        std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xc0) != 0x80; }));
}

void pad(std::ostream& out, size_t n)
{
    for (size_t i = 0; i < n; i++) out << ' ';
}
}  // namespace

Table::Table(std::vector<Column> columns) : columns_(std::move(columns)) {}

void Table::add_row(std::vector<std::string> cells)
{
    if (cells.size() > columns_.size())
        throw std::logic_error("table row has more cells than columns");
    cells.resize(columns_.size());
    rows_.push_back(std::move(cells));
}

void Table::print(std::ostream& out) const
{
    std::vector<size_t> width(columns_.size());
    for (size_t c = 0; c < columns_.size(); c++) {
        width[c] = display_width(columns_[c].header);
        for (const auto& row : rows_) width[c] = std::max(width[c], display_width(row[c]));
    }
    auto print_row = [&](auto cell_of) {
        std::string line;
        for (size_t c = 0; c < columns_.size(); c++) {
            const std::string& cell = cell_of(c);
            size_t gap = width[c] - display_width(cell);
            bool last = c + 1 == columns_.size();
            if (columns_[c].align == Align::right)
                line.append(gap, ' ').append(cell);
            else
                line.append(cell).append(last ? 0 : gap, ' ');
            if (!last) line.append("  ");
        }
        while (!line.empty() && line.back() == ' ') line.pop_back();
        out << line << '\n';
    };
    print_row([&](size_t c) -> const std::string& { return columns_[c].header; });
    for (const auto& row : rows_) print_row([&](size_t c) -> const std::string& { return row[c]; });
}

void KeyValueList::add(std::string key, std::string value)
{
    items_.emplace_back(std::move(key), std::move(value));
}

void KeyValueList::print(std::ostream& out) const
{
    size_t width = 0;
    for (const auto& [key, value] : items_) width = std::max(width, display_width(key));
    for (const auto& [key, value] : items_) {
        out << key << ':';
        pad(out, width - display_width(key) + 2);
        out << value << '\n';
    }
}

}  // namespace jal::ctl
