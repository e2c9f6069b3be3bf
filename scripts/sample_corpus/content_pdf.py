"""The words of the generated PDFs: rate card, handbook, operations report, data notice.

Plain data only (paragraphs, table rows, hyphenation points, HTML for the multilingual
page); `pdf_documents` lays it out. Every document holds sentences that appear in no other
document, so search and quote-verification tests have something exact to find; keep them
unique when editing, and rerun the script, whose page-count checks catch layout drift.
"""

from __future__ import annotations

from .pdf_layout import SANS, Face

# ------------------------------------------------------------- pricing/rate-card.pdf

RATE_CARD_PLANS = [
    ("Plan", "Monthly price", "Included API calls", "Seats", "Overage per 1,000 calls"),
    ("Starter", "$49", "250,000", "5", "$0.20"),
    ("Growth", "$399", "5,000,000", "25", "$0.12"),
    ("Scale", "$1,450", "25,000,000", "100", "$0.08"),
    ("Enterprise", "Custom", "Custom", "Unlimited", "Negotiated"),
]
RATE_CARD_STORAGE = [
    ("Resource", "Unit", "List price"),
    ("Hot object storage", "GB-month", "$0.023"),
    ("Archive storage", "GB-month", "$0.004"),
    ("Egress after the first 100 GB", "GB", "$0.05"),
    ("Dedicated IP address", "address-month", "$6.00"),
    ("Additional audit-log retention", "year", "$180.00"),
]
RATE_CARD_SUPPORT = [
    ("Support tier", "Response target", "Price"),
    ("Basic", "1 business day", "Included"),
    ("Priority", "4 hours", "10% of monthly spend, minimum $250"),
    ("Premier", "30 minutes, 24x7", "$4,000 per month"),
]

RATE_CARD_SECTIONS = [
    ("1. Plans at a glance", [
        "Northwind Cloud sells four subscription plans. Each plan includes a monthly "
        "allowance of API calls and seats; usage above the allowance is billed as overage "
        "at the end of the month. List prices below are in US dollars and exclude sales "
        "tax and VAT.",
        "The Starter plan is meant for teams evaluating the platform and is limited to a "
        "single production workspace. Customers who outgrow Starter can upgrade at any "
        "time, and the unused part of the month is credited against the first Growth "
        "invoice.",
    ], RATE_CARD_PLANS, [
        "Seats are named users with write access. Read-only viewers are free on every plan "
        "and do not count towards the seat limit.",
        "Enterprise pricing starts at a committed annual spend of $60,000 and includes "
        "single sign-on, a 99.95% availability commitment and a dedicated onboarding "
        "engineer for the first 90 days.",
    ]),
    ("2. Usage, storage and support", [
        "Growth plan overage is billed at $0.12 per 1,000 API calls. Starter overage is "
        "billed at $0.20 per 1,000 calls and Scale overage at $0.08 per 1,000 calls; "
        "partial blocks of 1,000 calls are rounded up. Usage is metered per workspace and "
        "summed across all workspaces of the same account.",
        "Storage and network resources are billed separately from the plan fee at the "
        "rates in the table below. Storage is measured as the daily average over the "
        "billing month.",
    ], RATE_CARD_STORAGE, [
        "Support is sold in three tiers. The response target is the time to a first "
        "human reply for a severity-1 ticket; lower severities have longer targets, "
        "listed in the support policy.",
    ], RATE_CARD_SUPPORT),
    ("3. Discounts and billing terms", [
        "Customers who prepay a full year receive a 15% discount on the plan fee. A "
        "three-year commitment raises the discount to 22%, with the price locked for the "
        "whole term. Registered nonprofits and accredited schools receive 30% off any "
        "plan except Enterprise.",
        "Invoices are issued on the first business day of each month and are payable "
        "within 30 days. Balances more than 30 days overdue accrue a late fee of 1.5% per "
        "month, and accounts more than 60 days overdue are moved to read-only mode after "
        "two written reminders.",
        "Prices in euros are the US dollar list price multiplied by 0.93 and rounded to "
        "the nearest whole euro; prices in pounds sterling use a factor of 0.79. The "
        "exchange factors are reviewed every January and July.",
        "This rate card replaces the rate card dated 1 September 2023. Existing customers "
        "keep their current prices until the first renewal after 1 March 2024, and any "
        "increase at renewal is capped at 7% per year.",
        "Questions about this rate card go to the Revenue Operations desk at "
        "pricing@northwind.example or +1 503 555 0142, Monday to Friday, 8:00 to 17:00 "
        "Pacific time.",
    ]),
]


# ----------------------------------------------------------- handbook/two-column.pdf

# Ligature characters (U+FB00 to U+FB04: ﬀ ﬁ ﬂ ﬃ ﬄ) are typed literally so that the text
# layer holds them, as it does in PDFs from typesetting software.
HANDBOOK_SECTIONS = [
    ("1. Working from anywhere", [
        "Northwind Cloud is a remote-ﬁrst company: there is no head oﬃce that anyone is "
        "expected to commute to, although the Portland and Dublin hubs are open to staff "
        "every weekday from 8:00 to 19:00. Employees may work from any of the 14 approved "
        "countries for up to 45 days per calendar year without prior approval. Longer "
        "stays need sign-oﬀ from People Operations, because payroll, tax and data-"
        "protection rules change once a stay passes the local threshold.",
        "We ask that you keep a “core overlap” of four hours with your team’s home time "
        "zone. Meetings that cross more than three zones are recorded and shared within "
        "24 hours, so nobody has to join a call at 2 a.m. to stay informed — the "
        "recording, its transcript and a short written summary are the oﬃcial record.",
    ]),
    ("2. Equipment and home oﬃce", [
        "New employees choose a laptop from the standard catalogue during their ﬁrst "
        "week; the default is a 14-inch machine with 32 GB of memory. Every employee also "
        "receives a one-time home-oﬃce allowance of $1,200 (or €1,100 in the euro "
        "countries) for a desk, chair, monitor and headset. Receipts are ﬁled in "
        "Ledgerline within 60 days of purchase; items bought later are not reimbursed.",
        "Laptops stay the property of Northwind Cloud and are refreshed every three "
        "years. A damaged device is replaced within ﬁve business days; a lost or stolen "
        "device must be reported to the service desk at once, because the security team "
        "wipes it remotely before the next check-in with the management infrastructure.",
    ]),
    ("3. Travel and expenses", [
        "All ﬁnancial approvals follow a single workﬂow in Ledgerline: the employee "
        "submits the claim, the manager approves it, and Finance pays approved claims in "
        "the next Thursday payment run. Claims under $75 need no receipt. Hotel stays are "
        "reimbursed up to $240 per night in tier-one cities such as London, New York and "
        "Tokyo, and up to $170 per night elsewhere.",
        "Economy class is the default for ﬂights under six hours; for longer ﬂights, "
        "premium economy is allowed when it costs less than 1.6 times the economy fare. "
        "The per diem for meals is $68 in the United States and €60 in Europe; alcohol is "
        "never reimbursable, not even at customer dinners. Managers who approve "
        "their own expenses break policy, and the claim will be returned.",
    ]),
    ("4. Onboarding", [
        "The onboarding workﬂow lasts 30 days and is tracked in a shared checklist with "
        "37 items. During the ﬁrst week, every engineer ships a small change to "
        "production with a buddy; this is not a test, but a way to make the deploy "
        "pipeline feel routine. Buddies are paired across teams on purpose, so that new "
        "staﬀ meet people outside their own reporting line.",
        "By day 30, new employees should have met their manager for four one-to-ones, "
        "read the engineering principles, and completed the security course, "
        "which takes about 90 minutes and includes a short quiz with a pass mark of 80%.",
    ]),
    ("5. Time oﬀ and leave", [
        "Full-time employees receive 27 days of paid holiday per year plus the public "
        "holidays of their country of employment. Unused holiday carries over up to a "
        "maximum of ﬁve days, which must be taken by 31 March of the following year. "
        "Parental leave is 20 weeks at full pay for every parent, regardless of gender or "
        "how the child joins the family.",
        "Sick leave does not need a doctor’s note for the ﬁrst three consecutive days. "
        "We would rather you rest than “push through” an illness and infect the team; "
        "managers are measured on how well their teams recover, not on attendance "
        "statistics.",
    ]),
    ("6. Security basics", [
        "Hardware security keys are mandatory for every account that can reach "
        "production or customer data; passwords alone are not accepted anywhere in the "
        "company. Lost keys are replaced the same day at either hub. Please never "
        "forward a customer’s data to a personal email address — not even to work on it "
        "over the weekend.",
        "Suspected phishing messages are reported with the “Report” button in the mail "
        "client; the security team answers within 30 minutes during working hours. The "
        "team runs a simulated phishing campaign every quarter, and the results are "
        "shared per department, never per person, to keep the exercise about learning "
        "rather than blame.",
    ]),
    ("7. Pay and performance reviews", [
        "Salaries are reviewed once a year, in April, against the published salary bands; "
        "there is no separate negotiation round. Each review combines a self-assessment, "
        "written feedback from two peers and the manager’s summary, and the result is one "
        "of four ratings. Out-of-cycle raises are possible after a promotion, and they are "
        "backdated to the ﬁrst day of the month in which the promotion was conﬁrmed.",
        "Equity grants vest over four years with a one-year cliﬀ. Employees in countries "
        "where stock options are taxed on grant receive restricted stock units instead, so "
        "that nobody pays tax on value they cannot yet sell. The compensation team "
        "publishes the band for every open role in the job advert.",
    ]),
    ("8. Learning and conferences", [
        "Every employee has a learning budget of $2,000 per year for courses, books and "
        "certiﬁcations, plus three learning days that do not count as holiday. Speakers "
        "accepted at a conference get travel and the ticket paid in full, on top of the "
        "learning budget. Unused budget does not roll over; it resets on 1 January.",
        "Engineers may spend up to 10% of their time on open-source projects that the "
        "platform depends on. Contributions go out under the author’s own name, and "
        "the legal team pre-approves the licences most often used — MIT, Apache 2.0 and "
        "BSD — so that small ﬁxes do not wait for a review.",
    ]),
    ("9. Health and wellbeing", [
        "Northwind pays for private health insurance in every country where it is "
        "customary, including dental cover for dependants. Employees also receive a "
        "wellbeing allowance of $50 per month, paid with salary, which can go towards a "
        "gym, a sports club, therapy or anything else that helps; nobody asks for a "
        "receipt. The employee assistance line is conﬁdential and open 24 hours a day.",
        "On-call engineers receive a ﬂat allowance of $350 for each week on the rota, "
        "and any night in which they are paged after 23:00 earns a late start the next "
        "morning. Nobody is on call for more than one week in four; teams too small for "
        "that rota share it with a neighbouring team.",
    ]),
    ("10. Code of conduct", [
        "We expect everyone to be kind, direct and specific. Criticise work, not people; "
        "assume good intent, and say so when a message reads diﬀerently from how it was "
        "probably meant. Harassment of any kind leads to disciplinary action, up to and "
        "including dismissal, whether it happens in a meeting, in chat, or at an "
        "after-work event.",
        "Concerns can be raised with a manager, with People Operations, or anonymously "
        "through the ethics line run by an independent provider. Reports are acknowledged "
        "within two business days, and retaliation against anyone who raises a concern in "
        "good faith is itself a breach of this code.",
    ]),
    ("11. Working with customers", [
        "Customer visits are planned with the account team at least two weeks ahead, "
        "and every visit has a written agenda that the customer has seen. Gifts from "
        "customers or vendors worth more than $100 are declined politely or handed to "
        "People Operations, who raﬄe them among all staﬀ at the end of the year. Meals "
        "with a customer are ﬁne as long as they would look reasonable in a newspaper.",
        "Never promise a feature, a date or a discount that is not already on the public "
        "roadmap or the rate card. Solutions engineers may share architecture diagrams "
        "of our infrastructure only under a signed non-disclosure agreement, and only the "
        "versions published in the sales library, which the security team reviews every "
        "quarter. Requests for anything more detailed — penetration-test reports, "
        "data-centre addresses, staﬀ lists — go to the trust team, who answer within ﬁve "
        "business days.",
    ]),
    ("12. Privacy of employee data", [
        "People Operations stores employee records in a single HR system with access "
        "limited to nine named people. Managers see salary, rating and leave data for "
        "their own reports only, and the audit log of who viewed which record is "
        "reviewed every month by the Data Protection Oﬃcer. Employees can download a copy "
        "of everything held about them from the self-service portal at any time.",
        "Monitoring of work devices is limited to what the security team needs to keep "
        "the infrastructure safe: malware detection, disk encryption status and "
        "operating-system patch levels. We do not read private messages, track keystrokes "
        "or take screenshots, and we never use security telemetry in a performance "
        "review — a rule written into every manager’s contract since 2021.",
    ]),
    ("13. Leaving Northwind", [
        "Employees who resign give the notice period in their contract, usually four "
        "weeks. On the last day, the manager collects the laptop and security keys, and "
        "access is revoked automatically at 18:00 local time by the identity workﬂow. "
        "Final pay includes unused holiday and any outstanding expense claims; ﬁnancial "
        "questions after departure go to payroll@northwind.example.",
    ]),
]


# Break points the handbook layout may use, as a typesetter's hyphenation list would.
HANDBOOK_HYPHENATION = (
    "infra-structure", "reim-bursed", "reim-bursable", "ex-penses", "prin-ci-ples",
    "com-pen-sation", "contri-butions", "neigh-bouring", "acknow-ledged", "thresh-old",
    "head-set", "em-ploy-ees", "em-ployee", "man-age-ment", "com-pany", "pro-duc-tion",
    "in-sur-ance", "de-pen-dants", "dis-ci-plinary", "ap-proval", "ap-proved",
    "re-tali-ation", "promo-tion", "regard-less", "auto-mati-cally", "out-stand-ing",
    "pur-chase", "con-fer-ence", "archi-tec-ture", "pene-tra-tion", "dis-clo-sure",
    "tele-metry", "per-for-mance", "oper-ating", "en-cryp-tion", "to-mor-row", "cata-logue",
    "simu-lated", "de-part-ment",
    "re-quests", "pay-ment", "assess-ment", "negoti-ation", "allow-ance", "pro-vider",
)


# -------------------------------------------------- reports/rotated-and-scanned.pdf

REPORT_SUMMARY = [
    "Platform availability for the third quarter of 2024 was 99.982 percent across all "
    "regions, against a commitment of 99.95 percent. Total customer-facing downtime was "
    "23 minutes, spread over three incidents, and no customer data was lost.",
    "On 2 July 2024 a DNS change in us-east caused 11 minutes of failed API calls for "
    "roughly 8 percent of requests. On 19 August 2024 a storage controller in "
    "ap-northeast failed over slowly and writes stalled for 9 minutes. On 23 September "
    "2024 an expired internal certificate interrupted webhook delivery for 3 minutes; "
    "all queued webhooks were delivered within the following hour.",
    "Paying customers grew from 3,874 to 4,212 during the quarter, and API traffic rose "
    "by 17 percent to 41.6 billion calls. Peak traffic of 212,000 requests per second "
    "was recorded on 30 September 2024 during quarter-end reporting.",
    "Capacity headroom stayed above the 35 percent target in every region except "
    "ap-northeast, where it fell to 29 percent in late August. Additional hosts for Osaka "
    "were ordered on 4 September 2024 and are due in the fourth quarter.",
]
REPORT_REGIONS = [
    ("Region", "Data center", "Availability", "p95 latency", "Incidents"),
    ("us-east", "Ashburn, Virginia", "99.971%", "41 ms", "1"),
    ("us-west", "Hillsboro, Oregon", "99.998%", "36 ms", "0"),
    ("eu-central", "Frankfurt", "99.993%", "38 ms", "0"),
    ("eu-west", "Dublin", "99.996%", "44 ms", "0"),
    ("ap-northeast", "Osaka", "99.965%", "57 ms", "1"),
    ("sa-east", "São Paulo", "99.989%", "63 ms", "1"),
]
REPORT_MEMO = [
    "NORTHWIND CLOUD INC. - INTERNAL MEMORANDUM",
    "",
    "To:      Site Reliability Engineering",
    "From:    Dana Whitaker, Chief Financial Officer",
    "Date:    9 October 2024",
    "Subject: Osaka capacity",
    "",
    "The board approved a capital budget of $2.4 million",
    "for the Osaka region on 9 October 2024.",
    "",
    "Purchase orders above $250,000 still need a second",
    "signature from the VP Engineering. Please file the",
    "vendor quotes in the finance share by 25 October.",
    "",
    "",
    "Signed: ____________________   D. Whitaker",
]
REPORT_GLOSSARY = [
    ("Availability", "The share of one-minute intervals in which synthetic probes saw "
     "successful API responses, measured per region."),
    ("Restorable backup", "A backup that passed a test restore within the last 30 days; "
     "older backups count as unverified in this report."),
    ("Headroom", "Spare capacity at the daily peak, as a percentage of installed "
     "capacity."),
    ("Sev-1", "An incident with customer-visible impact in more than one region or on "
     "more than 5 percent of requests."),
]


# ----------------------------------------------------------- intl/multilingual.pdf

MULTILINGUAL_HTML = """\
<h1>Customer notice: where your data lives</h1>
<p>Northwind Cloud publishes this notice in nine languages for customers in 31 countries.
Each paragraph says the same thing: the region a workspace was created in is where its
data stays.</p>
<p><b>Deutsch:</b> Die Daten unserer Kunden in Köln, München und Zürich werden
ausschließlich im Rechenzentrum Frankfurt gespeichert. Größere Änderungen kündigen wir
30 Tage im Voraus an.</p>
<p><b>Ελληνικά:</b> Τα δεδομένα των πελατών της Northwind αποθηκεύονται στη Φρανκφούρτη
και δεν μεταφέρονται ποτέ εκτός Ευρωπαϊκής Ένωσης.</p>
<p><b>Русский:</b> Данные клиентов Northwind хранятся во Франкфурте; резервные копии
хранятся в Дублине в течение 35 дней.</p>
<p><b>한국어:</b> 서울 고객의 데이터는 오사카 리전에 저장됩니다.</p>
<p dir="rtl" lang="ar">يتم تخزين بيانات عملاء نورثويند في فرانكفورت لمدة خمس سنوات.</p>
<p dir="rtl" lang="he">הנתונים של לקוחות נורת׳ווינד נשמרים בפרנקפורט ובדבלין.</p>
"""
MULTILINGUAL_CSS = (
    "@font-face {font-family: dvsans; src: url(DejaVuSans.ttf);}"
    "body {font-family: dvsans; font-size: 11pt; line-height: 1.4;}"
    "h1 {font-size: 17pt;} p {margin-bottom: 9pt;}"
)
MULTILINGUAL_PAGE_TWO = [
    ("Regional contacts", SANS, 15),
    ("", SANS, 11),
    ("Frankfurt office: Datenschutzbeauftragte Jürgen Weiß, Tel. +49 69 5550 1842", SANS, 11),
    ("Athens partner: Νίκος Παπαδόπουλος, υπεύθυνος συμμόρφωσης", SANS, 11),
    ("Moscow reseller: Ирина Волкова, отдел по работе с клиентами", SANS, 11),
    ("", SANS, 11),
    ("中文：北风云在上海设有客户支持中心，工作时间为北京时间九点到十八点。", Face("china-s"), 12),
    ("日本語：大阪リージョンのデータは東京のバックアップに毎晩複製されます。", Face("japan"), 12),
    ("", SANS, 11),
    ("Support hours in Shanghai and Osaka follow local public holidays.", SANS, 11),
]
