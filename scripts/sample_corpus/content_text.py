"""The words of the HTML, Markdown and plain-text files, and the templates of the long policy.

Plain data only; `text_documents` encodes it (UTF-8, windows-1252, CRLF) and generates the
long policy from the templates. The FAQ page hides marker words (stylemarkerpangolin,
hiddenmarkeraxolotl, ...) in style, script, comments and hidden elements, where an indexer
must not look, so that a search for one shows whether such text leaked into the index.
"""

from __future__ import annotations

# ------------------------------------------------------------------------ HTML pages

FAQ_HTML = """\
<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Northwind Cloud FAQ &amp; Support Answers</title>
<link rel="canonical" href="https://help.northwind.example/faq?lang=en&amp;v=2">
<style>
  /* stylemarkerpangolin: theme for the help centre */
  body { font-family: Georgia, serif; max-width: 46em; margin: 2em auto; }
  .price::after { content: " (excl. VAT)"; }
</style>
<script>
  // scriptmarkerquokka: help-centre banner, injected client-side only
  var bannerHtml = "<div class=\\"banner\\">scriptmarkerquokka</div>";
  if (document.body && bannerHtml.length > 0) { document.body.insertAdjacentHTML("afterbegin", bannerHtml); }
</script>
</head>
<body>
<!-- commentmarkerokapi: legal still has to review the refund answer -->
<header>
<h1>Frequently asked questions</h1>
<p>Answers from the <b>North</b>wind Cloud support team, last updated 3&nbsp;May&nbsp;2024.</p>
</header>
<main>
<h2 id="billing">Billing &amp; invoices</h2>
<p>Invoices are issued on the <b><i>first business day</i></b> of each month and can be
downloaded as PDF from <a href="https://app.northwind.example/billing">the billing page</a>.
Northwind&#8217;s finance team can re-issue an invoice with a purchase-order number within
two business days.</p>
<p>Refunds for annual plans are pro-rated to the day when a cancellation arrives within
the first 60 days &#x2014; after that, the plan runs until the end of its term.</p>
<div hidden>hiddenmarkeraxolotl: draft answer about crypto payments, not published.</div>
<p style="display:none">displaynonemarkernarwhal: old answer about fax invoices.</p>
<h2 id="support">Support</h2>
<p>Our support team in Montr&eacute;al answers &quot;Priority&quot; tickets within
4&nbsp;hours and Standard tickets within 1&nbsp;business&nbsp;day.
The Northwind status page posts incident updates every 30 minutes until an incident is resolved.</p>
<p>Quotas are checked with <code>limit &lt; usage</code> and <code>usage &gt; 0</code>
before a request is accepted; rejected requests return HTTP 429 with a
<span class="mono">Retry-After</span> header.</p>
<table>
<thead>
<tr><th>Region</th><th>Support hours (local time)</th><th>Languages</th></tr>
</thead>
<tbody>
<tr><td>Americas</td><td>07:00&ndash;20:00, Monday to Friday</td><td>English, Spanish</td></tr>
<tr><td>Europe</td><td>08:00&ndash;18:00, Monday to Friday</td><td>English, German, French</td></tr>
<tr><td>Asia Pacific</td><td>09:00&ndash;18:00, Monday to Saturday</td><td>English, Japanese</td></tr>
</tbody>
</table>
<h2 id="limits">Limits</h2>
<ul>
<li>Each workspace can hold up to <b>500</b> API keys.</li>
<li>Webhook payloads are capped at 256&nbsp;KB.
  <ul>
  <li>Larger events are sent as a link that stays valid for 24 hours.</li>
  </ul>
</li>
<li>Audit logs are kept for <span class="price">400 days</span> on the Scale plan.</li>
</ul>
<ol>
<li>Open <i>Settings</i>.</li>
<li>Choose <i>API keys</i> and press <b>Rotate</b>.</li>
</ol>
<h2 id="cli">Checking usage from the command line</h2>
<pre>
$ nw usage --month 2024-04
  workspace        api_calls
  acme-prod        4,812,330

  acme-staging       118,902


total              4,931,232
</pre>
<h2 id="contact">Postal address</h2>
<p>Northwind Cloud Inc.<br>410 Harbor Street<br>Portland, OR 97209<br>United States</p>
</main>
</body>
</html>
"""

LEGACY_1252_HTML = """\
<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="windows-1252">
<title>Northwind Cloud Europe \u2013 Reseller Notice</title>
</head>
<body>
<h1>Reseller notice for Germany, Austria and Switzerland</h1>
<p>This page was exported from the old partner portal in 2011 and is kept for reference.</p>
<p>The reseller margin for M\u00fcller und S\u00f6hne GmbH is fixed at 18 percent until 31 December 2025.
The Team bundle costs \u20ac29 per seat per month; the \u201cPlus\u201d bundle costs \u20ac49.</p>
<p>Orders placed through the Stra\u00dfburger Stra\u00dfe office in Berlin are invoiced in euros \u2013
never in Swiss francs \u2014 and ship with a printed caf\u00e9-style quick-start card.</p>
<p>Contact: Ren\u00e9 Gr\u00fcnwald, partner desk, 09:00\u201317:00 CET.</p>
</body>
</html>
"""

NO_CHARSET_HTML = """\
<HTML>
<HEAD>
<TITLE>Northwind Cloud Partner Directory</TITLE>
</HEAD>
<BODY BGCOLOR="#FFFFFF" TEXT="#000000">
<H1>Partner Directory</H1>
<P>This directory lists certified implementation partners as of April 2019.
<P><FONT FACE="Verdana" SIZE="2" COLOR="#333366">Our partner in Lyon runs a naïve café, €42 per seat per month for the Starter bundle.</FONT>
<P>Partners by country:
<UL>
<LI>France: Brasserie Numérique SARL, Lyon
<LI>Spain: Niño Sistemas S.L., Málaga
<LI>Denmark: Ærø Data ApS, Odense
</UL>
<P>To become a partner, complete the 12-hour certification and pass the exam with a score of 75 or more.
<HR>
<P><FONT SIZE="1">Page maintained by the alliances team.</FONT>
</BODY>
</HTML>
"""


# ------------------------------------------------------------- Markdown and plain text

GETTING_STARTED_MD = """\
# Getting started with Northwind Cloud

This guide takes you from a new account to your first API call. It assumes you have
an account on the **Starter** plan or above and a terminal with `curl` installed.

## 1. Install the CLI

The `nw` command-line tool runs on Linux, macOS and Windows. Version 4.2 or later is
required for the commands below.

```bash
curl -fsSL https://get.northwind.example/install.sh | sh
nw --version
# nw 4.2.1 (build 2024-03-19)
```

## 2. Create a workspace

Run nw init --region eu-central to create your first workspace in under two minutes.
The region cannot be changed later, so pick the one closest to *your users*, not to
your developers.

- `eu-central` (Frankfurt) and `eu-west` (Dublin) keep data inside the EU.
- `us-east` (Virginia) and `us-west` (Oregon) serve North America.
- `ap-northeast` (Osaka) serves Japan and Korea.
  - Osaka workspaces are backed up to Tokyo every night.

## 3. Make your first API call

1. Create an API key with `nw keys create --name first-key`.
2. Export it: `export NW_API_KEY=nwk_live_...`.
3. Call the health endpoint:

   ```bash
   curl -H "Authorization: Bearer $NW_API_KEY" https://api.northwind.example/v2/health
   ```

A healthy workspace answers with `{"status": "ok"}` in about 40 milliseconds.

## Plans compared

| Plan       | API calls included | Seats     | Support  |
|------------|-------------------:|-----------|----------|
| Starter    |            250,000 | 5         | Basic    |
| Growth     |          5,000,000 | 25        | Priority |
| Scale      |         25,000,000 | 100       | Priority |
| Enterprise |             Custom | Unlimited | Premier  |

> Tip: new workspaces get a 14-day trial of the Growth plan's limits, whatever plan
> the account is on.

## Next steps

- Read the [API reference](https://docs.northwind.example/api/v2) and the
  [webhook guide](https://docs.northwind.example/webhooks).
- Join the community forum, where the developer relations team answers questions on
  weekdays.
- If something breaks, __do not__ rotate every key at once: rotate one, test it, then
  rotate the rest.
"""

RELEASE_NOTES_TXT = """\
NORTHWIND CLOUD RELEASE NOTES
=============================

Version 4.2.1 - 19 March 2024
Fixed a crash in "nw usage" when a workspace had no traffic in the selected month.
The Windows installer now adds nw.exe to the user PATH instead of the system PATH.

Version 4.2.0 - 12 March 2024
Version 4.2.0 was released on 12 March 2024 and raised the webhook retry limit from 5 to 8 attempts.
Retries now back off exponentially, starting at 30 seconds and capped at 1 hour.
The API gains a /v2/usage/daily endpoint; the older /v1/usage endpoint is deprecated
and will be removed on 30 September 2024.

Version 4.1.3 - 6 February 2024
Audit-log exports larger than 2 GB are now split into numbered parts.
Known issue: exports started before the upgrade must be restarted.

Version 4.1.0 - 9 January 2024
Added single sign-on with SAML 2.0 for the Scale plan (previously Enterprise only).
Café-style status badges were replaced by plain text labels — thanks to the 212
customers who answered the accessibility survey.

Support for TLS 1.0 and 1.1 ended with this release.
"""


# ----------------------------------------------------------------- docs/long-policy.md

POLICY_TEAMS = ("Platform", "Identity", "Data Engineering", "Billing", "Customer Support",
                "Site Reliability", "Security Operations", "Finance Systems",
                "Developer Experience", "Compliance")
POLICY_SYSTEMS = ("Ledgerline", "the Atlas data warehouse", "the Harbor API gateway",
                  "the Beacon status service", "the Quill document store",
                  "the Meridian billing engine", "the Tern job scheduler",
                  "the Keystone identity service", "the Lumen analytics cluster")
POLICY_DATA = ("restricted", "confidential", "customer personal", "payment card", "internal")
POLICY_PEOPLE = (("Priya Raman", "Chief Information Security Officer"),
                 ("Tomás Herrera", "Head of Platform"),
                 ("Ingrid Solberg", "Data Protection Officer"),
                 ("Marcus Oyelaran", "VP Engineering"),
                 ("Hannah Kowalczyk", "Director of Compliance"),
                 ("Kenji Watanabe", "Head of Site Reliability"),
                 ("Aisha Bello", "Head of Customer Support"),
                 ("Lukas Brandt", "Finance Systems Lead"))
POLICY_REGIONS = ("eu-central (Frankfurt)", "us-east (Virginia)", "ap-northeast (Osaka)",
                  "eu-west (Dublin)", "us-west (Oregon)")
POLICY_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
                 "September", "October", "November", "December")
POLICY_TOOLS = ("Watchtower", "the Vaultkeeper secrets manager", "Sentinel", "Lookout")
POLICY_TEMPLATES = (
    "The {team} team reviews access to {system} every {review_days} days and removes "
    "accounts that have been idle for more than {idle_days} days.",
    "Requests to export {data} data from {system} must be approved by {person}, the "
    "{role}, within {small} business days.",
    "Backups of {system} are retained for {days} days in {region} and copied nightly to "
    "a second region.",
    "During {month}, the {team} team recorded {n} policy exceptions, of which {m} were "
    "closed within the agreed window.",
    "Encryption keys for {system} rotate every {days} days; a rotation that fails twice "
    "opens a severity-{sev} incident.",
    "No more than {patch_pct} percent of production hosts in {region} may be patched at "
    "once, so that capacity never falls below the agreed reserve.",
    "Contractors who handle {data} data complete the security course within {small} days "
    "of their start date.",
    "Where {system} stores {data} data, field-level masking hides all but the last {small} "
    "characters from support staff.",
    "{person} ({role}) owns this control and reports on it to the Security Council every "
    "quarter.",
    "An audit in {month} sampled {n} change tickets for {system} and found {m} without a "
    "linked review.",
    "Log entries from {system} are kept for {days} days and can be searched by the {team} "
    "team only.",
    "If a laptop holding {data} data is lost, its owner reports it to the service desk "
    "within {small} hours.",
    "Vendors that process {data} data sign the data processing addendum before their "
    "first invoice is paid.",
    "The recovery point objective for {system} is {rpo} minutes and the recovery time "
    "objective is {small} hours.",
    "Restore drills for {system} run every quarter; the drill in {month} restored {n} "
    "gigabytes in {small} hours.",
    "Privileged sessions on {system} are recorded, and the recordings are kept for {days} "
    "days.",
    "Changes to firewall rules in {region} need two approvals, one of them from the "
    "{team} team.",
    "Customer requests to delete {data} data are completed within {small} days and "
    "confirmed in writing.",
    "Staff may not copy {data} data to personal storage, removable media or unmanaged "
    "devices.",
    "Alerts from {tool} that stay unacknowledged for {small} minutes page the secondary "
    "on-call engineer.",
    "The {team} team keeps a register of {n} approved third-party libraries for {system}.",
    "A risk rated high needs a named owner and a remediation date no later than {days} "
    "days after it is logged.",
    "Test environments for {system} use synthetic data, and production {data} data is "
    "never copied into them.",
    "In {month}, {person} approved an exception that lets {system} keep audit logs in "
    "{region} for {days} days.",
    "Service-account passwords for {system} are at least {chars} characters long and are "
    "stored only in {tool}.",
    "Security training completion reached {pct} percent in {month}, against a target of "
    "95 percent.",
)
POLICY_SECTIONS = (
    ("Purpose and scope", ("Who this policy covers", "Systems in scope", "Exceptions")),
    ("Roles and responsibilities", ("Control owners", "The Security Council",
                                    "Managers and staff")),
    ("Data classification", ("Classification levels", "Labelling", "Handling rules")),
    ("Access control", ("Joiners, movers and leavers", "Privileged access",
                        "Access reviews")),
    ("Encryption and key management", ("Data at rest", "Data in transit", "Key rotation")),
    ("Logging and monitoring", ("What is logged", "Retention", "Alerting")),
    ("Backup and recovery", ("Backup schedule", "Restore testing", "Recovery objectives",
                             "Review history")),
    ("Change management", ("Standard changes", "Emergency changes", "Firewall changes")),
    ("Vendor management", ("Due diligence", "Contracts", "Ongoing review")),
    ("Incident response", ("Severity levels", "Communication", "Post-incident review")),
    ("Training and awareness", ("Mandatory courses", "Phishing exercises")),
    ("Review of this policy", ("Review cycle", "Version history")),
)
POLICY_FIXED_SENTENCES = {
    (7, 4): "Section 7.4 of this policy was last reviewed by the Security Council on 21 "
            "August 2024.",
    (1, 1): "This policy applies to all 612 employees and 48 long-term contractors of "
            "Northwind Cloud, in every country where the company operates.",
    (12, 2): "Version 3.0 of this policy replaced version 2.6 on 1 October 2024 after a "
             "consultation that collected 143 comments.",
}
