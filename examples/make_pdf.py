"""Generate examples/docs/travel-policy.pdf for the Sourcebook example corpus.

The content is fictional (Northwind Labs). Run from anywhere:

    . .venv/bin/activate
    python examples/make_pdf.py

Requires fpdf2 (a dev dependency). Each page starts with its own heading so that
facts land on different pages: booking rules on page 1, per-diem and hotel
allowances on page 2, claims and insurance on page 3.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from fpdf import FPDF

OUT = Path(__file__).resolve().parent / "docs" / "travel-policy.pdf"

TITLE = "Northwind Labs Travel and Expenses Policy"

# Each page: list of (kind, text) where kind is "h1", "h2" or "p".
PAGES: list[list[tuple[str, str]]] = [
    [
        ("h1", TITLE),
        ("p", "Version 2.1, effective 1 February 2024. Policy owner: Helen Castellano, "
              "Finance Director. This policy applies to all employees and contractors "
              "who travel on Northwind Labs business, for example to visit customer "
              "sites, install Beacon Edge gateways or attend conferences."),
        ("h2", "1. Approval"),
        ("p", "Every business trip must be approved before anything is booked. Trips "
              "within the United Kingdom are approved by your line manager. Trips "
              "abroad need approval from both your line manager and the Finance "
              "Director. Requests are submitted in Compass with the purpose of the "
              "trip, the dates and an estimated cost."),
        ("h2", "2. Booking rules"),
        ("p", "All flights, trains and hotels are booked through Voyager, our "
              "corporate travel booking portal. Bookings made elsewhere will only be "
              "reimbursed if they are at least 10% cheaper than the Voyager price "
              "shown at the time of booking, with a screenshot as evidence."),
        ("p", "Flights must be booked at least 14 days before departure. Late "
              "bookings need a written reason in Compass. Economy class is the "
              "standard for all flights. Premium economy may be booked for flights "
              "with a scheduled duration of more than 6 hours. Business class is "
              "never reimbursed, even when paid for with air miles."),
        ("p", "For rail travel, standard class is the norm. First class is allowed "
              "only for journeys longer than 3 hours, or when it costs no more than "
              "standard class. Leeds to London trips should use advance tickets "
              "where possible."),
        ("p", "Car hire is allowed when public transport is impractical, for example "
              "to reach remote customer sites. Choose a small or medium car; electric "
              "and hybrid cars are preferred."),
    ],
    [
        ("h1", "3. Accommodation"),
        ("p", "Hotels must be booked through Voyager. The nightly limits below "
              "include taxes but exclude breakfast:"),
        ("li", "London: up to £180 per night."),
        ("li", "Elsewhere in the UK: up to £120 per night."),
        ("li", "Other European cities: up to EUR 170 per night."),
        ("li", "United States: up to USD 250 per night."),
        ("p", "If you stay with friends or family instead of a hotel, you may claim "
              "a flat £30 per night to cover a thank-you gift or meal."),
        ("h1", "4. Per-diem allowances"),
        ("p", "Instead of claiming individual meal receipts, travellers receive a "
              "daily per-diem allowance for food and drink on each full day away "
              "from home. Half the daily rate applies on the day you travel out and "
              "the day you return."),
        ("li", "United Kingdom: £45 per day."),
        ("li", "European Union and Switzerland: EUR 60 per day."),
        ("li", "United States and Canada: USD 75 per day."),
        ("p", "The per-diem is reduced by one third for each main meal that is "
              "already provided, for example by a customer or a conference. "
              "Alcohol is never covered by the per-diem or by any other expense "
              "claim, except at a team event approved in advance by the CEO."),
    ],
    [
        ("h1", "5. Mileage and local transport"),
        ("p", "Employees who use their own car for business travel can claim 45p per "
              "mile for the first 10,000 business miles in a tax year and 25p per "
              "mile after that. Commuting to the Leeds studio is not business "
              "travel. Taxis are allowed late at night (after 21:00), when carrying "
              "equipment such as Edge gateways, or when no reasonable public "
              "transport exists."),
        ("h1", "6. Claiming expenses"),
        ("p", "Claims are submitted in Compass within 30 days of the end of the trip. "
              "A receipt is required for every item over £25. Claims submitted more "
              "than 90 days after the trip will not be paid. Approved claims are "
              "reimbursed in the next monthly payroll run."),
        ("p", "Frequent travellers can request a Northwind Labs corporate card from "
              "Finance. Corporate card statements must be reconciled in Compass by "
              "the 5th working day of each month."),
        ("h1", "7. Travel insurance and safety"),
        ("p", "All business trips are covered by the company's travel insurance, "
              "provided by Meridian Mutual under policy number NWL-TRV-2024-118. "
              "Carry the insurance card from Compass with you. Before travelling "
              "abroad, check the government travel advice for your destination."),
        ("p", "In an emergency while travelling, call the 24-hour assistance line on "
              "the insurance card first, then let your manager know. Questions about "
              "this policy go to finance@northwindlabs.example."),
    ],
]


class PolicyPDF(FPDF):
    def header(self) -> None:
        self.set_font("Helvetica", "I", 8)
        self.set_text_color(120, 120, 120)
        self.cell(0, 6, "Northwind Labs - Internal", align="R")
        self.ln(10)
        self.set_text_color(0, 0, 0)

    def footer(self) -> None:
        self.set_y(-15)
        self.set_font("Helvetica", "I", 8)
        self.set_text_color(120, 120, 120)
        self.cell(0, 10, f"Page {self.page_no()} of {{nb}}", align="C")
        self.set_text_color(0, 0, 0)


def build(out: Path = OUT) -> Path:
    pdf = PolicyPDF(format="A4")
    pdf.set_title(TITLE)
    pdf.set_author("Helen Castellano, Northwind Labs Finance")
    pdf.set_subject("Business travel booking rules, per-diem allowances and expense claims")
    pdf.set_keywords("travel, expenses, per diem, Northwind Labs")
    pdf.set_creator("examples/make_pdf.py (fpdf2)")
    # Fixed date so that re-running the script gives a byte-identical file.
    pdf.set_creation_date(datetime(2024, 2, 1, 9, 0, 0, tzinfo=timezone.utc))
    pdf.set_auto_page_break(auto=True, margin=20)
    pdf.set_margins(20, 15, 20)

    for blocks in PAGES:
        pdf.add_page()
        for kind, text in blocks:
            if kind == "h1":
                pdf.set_font("Helvetica", "B", 16)
                pdf.multi_cell(0, 9, text, new_x="LMARGIN", new_y="NEXT")
                pdf.ln(2)
            elif kind == "h2":
                pdf.set_font("Helvetica", "B", 13)
                pdf.multi_cell(0, 8, text, new_x="LMARGIN", new_y="NEXT")
                pdf.ln(1)
            elif kind == "li":
                pdf.set_font("Helvetica", "", 11)
                pdf.set_x(pdf.l_margin + 5)
                pdf.multi_cell(0, 6, "- " + text, new_x="LMARGIN", new_y="NEXT")
            else:
                pdf.set_font("Helvetica", "", 11)
                pdf.multi_cell(0, 6, text, new_x="LMARGIN", new_y="NEXT")
                pdf.ln(3)
    if pdf.page_no() != len(PAGES):
        raise SystemExit(f"expected {len(PAGES)} pages, got {pdf.page_no()}")
    out.parent.mkdir(parents=True, exist_ok=True)
    pdf.output(str(out))
    return out


if __name__ == "__main__":
    path = build()
    print(f"wrote {path}")
