-- Read-only queries of store/inspection.py (system checks, durable_status). Not a migration file.

-- name: store_exists -- is the store migrated at all?
select to_regclass('durable_schedule_store') is not null

-- name: store_row -- schema version, compatibility floor and runtime epoch.
select schema_version, compatibility_floor, runtime_epoch from durable_schedule_store

-- name: role_flags -- of each given role: its name, superuser and bypassrls flags (no row:
-- missing), the roles it is a member of (the contract: none; a membership brings that role's
-- privileges and RLS policies with it), and its LOGIN, CREATEROLE and REPLICATION flags (the
-- contract: none). One statement for both roles.
select r.rolname::text, r.rolsuper, r.rolbypassrls,
       array(select g.rolname::text from pg_auth_members m
               join pg_roles g on g.oid = m.roleid
              where m.member = r.oid order by 1),
       r.rolcanlogin, r.rolcreaterole, r.rolreplication
  from pg_roles r where r.rolname = any(%s::text[])

-- name: schema_creators -- who of PUBLIC and the given roles may CREATE in this schema or in
-- any other schema of the session's search path (the store's pinned search path and the
-- owner's unqualified statements resolve what they plant in this one; the owner's statements
-- resolve a better-matching overload planted in any schema of the path). A role holding it only
-- through PUBLIC is left to PUBLIC's row. The last column: is it the app schema.
with path as (
    select s.nsp, s.pos from unnest(current_schemas(false)) with ordinality as s(nsp, pos)),
public_may as (
    select p.nsp, p.pos, exists (select from pg_namespace n, aclexplode(n.nspacl) a
                                  where n.nspname = p.nsp and a.grantee = 0
                                    and a.privilege_type = 'CREATE') as yes
      from path p)
select who, nsp, quoted, is_app from (
    select 'PUBLIC' as who, pm.nsp::text as nsp, quote_ident(pm.nsp) as quoted,
           pm.nsp = current_schema() as is_app, pm.pos
      from public_may pm where pm.yes
    union all
    select r, pm.nsp::text, quote_ident(pm.nsp), pm.nsp = current_schema(), pm.pos
      from unnest(%s::text[]) as r, public_may pm
     where not pm.yes and has_schema_privilege(r, pm.nsp, 'CREATE')) found
 order by pos, who

-- name: executable_functions -- this schema's product functions a role may EXECUTE.
select p.oid::regprocedure::text
  from pg_proc p join pg_namespace n on n.oid = p.pronamespace
 where n.nspname = current_schema() and has_function_privilege(%s, p.oid, 'EXECUTE')
   and (p.proname like 'durable%%' or p.proname like '%%schedule%%' or p.proname like '%%work%%')

-- name: definer_functions_executable -- SECURITY DEFINER functions of this schema a role may
-- EXECUTE (they run as the owner: each one the role may call widens what it may do).
select p.oid::regprocedure::text
  from pg_proc p join pg_namespace n on n.oid = p.pronamespace
 where n.nspname = current_schema() and p.prosecdef and p.prorettype <> 'trigger'::regtype
   and has_function_privilege(%s, p.oid, 'EXECUTE')

-- name: public_functions -- store functions PUBLIC may EXECUTE (none may; schema >= 5).
select f::text from durable_schedule_store_functions() as s(f)
 where has_function_privilege('public', f, 'EXECUTE')

-- name: revoke_public_execute -- revoke what the previous query finds (as the owner).
select durable_schedule_revoke_public_execute()

-- name: has_store_functions -- is the schema-5 function present (older stores lack it)?
select to_regprocedure('durable_schedule_store_functions()') is not null

-- name: history_partitions -- the attached partitions of the schedule history (store/drift.py).
select c.relname from pg_inherits i join pg_class c on c.oid = i.inhrelid
 where i.inhparent = to_regclass('durable_schedule_history') order by 1

-- name: table_privileges_of -- (role, table, privilege) for every given role, table and table
-- privilege the role holds (PUBLIC's included): the drift check's one query for all tables.
select r, t, p
  from unnest(%(roles)s::text[]) as r
 cross join unnest(%(tables)s::text[]) as t
 cross join unnest(%(privs)s::text[]) as p
 where has_table_privilege(r, t, p)

-- name: column_privileges_of -- (table, column, privilege) a role holds on the given tables'
-- live columns, by table, column and privilege.
select t, a.attname::text, p
  from unnest(%(tables)s::text[]) as t
  join pg_attribute a on a.attrelid = t::regclass and a.attnum > 0 and not a.attisdropped
 cross join unnest(%(privs)s::text[]) as p
 where has_column_privilege(%(role)s, a.attrelid, a.attnum, p)
 order by 1, 2, 3

-- name: lacking_column_privileges -- of the given (role, table, column, privilege) rows, those
-- the role does not hold.
select w.r, w.t, w.c, w.p
  from unnest(%(roles)s::text[], %(tables)s::text[], %(columns)s::text[], %(privs)s::text[])
       as w(r, t, c, p)
 where not has_column_privilege(w.r, w.t, w.c, w.p)

-- name: function_access -- for each (role, signature): whether the function exists, whether the
-- role may execute it and whether PUBLIC may (NULL for a missing function).
select w.r, w.f, to_regprocedure(w.f) is not null,
       has_function_privilege(w.r, to_regprocedure(w.f), 'EXECUTE'),
       has_function_privilege('public', to_regprocedure(w.f), 'EXECUTE')
  from unnest(%(roles)s::text[], %(signatures)s::text[]) as w(r, f)

-- name: sequence_privileges -- every identity or serial sequence of the store's tables (found in
-- the catalogue; a partition shares its parent's) with the sequence privileges PUBLIC, the
-- runtime and the dispatcher hold on it (a role's include what it holds through PUBLIC).
with seqs as (
    select s.oid, s.relname::text as name
      from pg_depend d
      join pg_class s on s.oid = d.objid and s.relkind = 'S'
      join pg_class t on t.oid = d.refobjid
     where d.classid = 'pg_class'::regclass and d.refclassid = 'pg_class'::regclass
       and d.deptype in ('a', 'i') and not t.relispartition
       and t.relnamespace = current_schema()::regnamespace
       and (t.relname like 'durable\_schedule\_%%' or t.relname like 'durable\_work%%'
            or t.relname = 'durable_runner_heartbeat'))
select s.name,
       array(select p from unnest(%(privs)s::text[]) as p
              where has_sequence_privilege('public', s.oid, p)),
       array(select p from unnest(%(privs)s::text[]) as p
              where has_sequence_privilege(%(runtime)s, s.oid, p)),
       array(select p from unnest(%(privs)s::text[]) as p
              where has_sequence_privilege(%(dispatcher)s, s.oid, p))
  from seqs s
 order by 1

-- name: clock_source -- the body of the clock seam (NULL when it is missing): the production
-- body reads transaction_timestamp() / clock_timestamp(); a test's ControlledClock replaces it
-- with a fixed instant.
select p.prosrc from pg_proc p
 where p.oid = to_regprocedure('durable_schedule_clock(text)')

-- name: rls_flags -- row-level security enabled / forced, and the owner, of the given tables.
select c.relname::text, c.relrowsecurity, c.relforcerowsecurity, pg_get_userbyid(c.relowner)::text
  from pg_class c
 where c.relnamespace = current_schema()::regnamespace and c.relname = any(%(tables)s::text[])

-- name: locked_out_tables -- which of the given tables another session holds in ACCESS EXCLUSIVE
-- mode (a migration, a LOCK TABLE): pg_policies deparses each policy with pg_get_expr, which
-- opens its table and would wait for that lock (store/drift.py).
select c.relname::text
  from pg_locks l join pg_class c on c.oid = l.relation
 where l.locktype = 'relation' and l.mode = 'AccessExclusiveLock' and l.granted
   and l.pid <> pg_backend_pid() and l.database = (select oid from pg_database
                                                     where datname = current_database())
   and c.relnamespace = current_schema()::regnamespace and c.relname = any(%(tables)s::text[])

-- name: policies -- every policy on the given tables, as pg_policies shows it.
select tablename::text, policyname::text, permissive, cmd, roles::text[], qual, with_check
  from pg_policies
 where schemaname = current_schema() and tablename = any(%(tables)s::text[])

-- name: unpinned_functions -- the functions the migrations pin (store/drift.py reads them
-- from the SQL files) that exist, are not SECURITY DEFINER (the query below covers those) and
-- lost their pinned search_path: a CREATE OR REPLACE without its SET clause drops it.
select s.signature
  from unnest(%(signatures)s::text[]) as s(signature)
  join pg_proc p on p.oid = to_regprocedure(s.signature)
 where not p.prosecdef
   and p.proconfig is distinct from
       array['search_path=' || quote_ident(current_schema()) || ', pg_temp']
 order by 1

-- name: unpinned_definer_functions -- store functions that run with the owner's rights
-- (SECURITY DEFINER) without exactly the pinned search_path of the migrations
-- (<app schema>, pg_temp): any other path lets a caller's planted object be resolved.
select s.f::text from durable_schedule_store_functions() as s(f) join pg_proc p on p.oid = s.f
 where p.prosecdef
   and p.proconfig is distinct from
       array['search_path=' || quote_ident(current_schema()) || ', pg_temp']
 order by 1

-- name: owned_by_roles -- store functions, tables and types of this schema that one of the
-- given roles owns (the contract: the migration owner owns every one). An owner may drop the
-- object, alter its settings and grant it to anyone, none of which a grant shows.
select 'function ' || s.f::text, pg_get_userbyid(p.proowner)::text
  from durable_schedule_store_functions() as s(f) join pg_proc p on p.oid = s.f
 where pg_get_userbyid(p.proowner) = any(%(roles)s::text[])
union all
select 'table ' || c.relname::text, pg_get_userbyid(c.relowner)::text
  from pg_class c
 where c.relnamespace = current_schema()::regnamespace and c.relkind in ('r', 'p')
   and (c.relname like 'durable\_schedule\_%%' or c.relname like 'durable\_work%%'
        or c.relname = 'durable_runner_heartbeat')
   and pg_get_userbyid(c.relowner) = any(%(roles)s::text[])
union all
select 'type ' || t.typname::text, pg_get_userbyid(t.typowner)::text
  from pg_type t
 where t.typnamespace = current_schema()::regnamespace and t.typname like 'durable\_%%'
   and (t.typrelid = 0 or (select c.relkind from pg_class c where c.oid = t.typrelid) = 'c')
   and pg_get_userbyid(t.typowner) = any(%(roles)s::text[])
order by 1

-- name: roles_session_may_not_set -- of the given roles, those the session user may not enter
-- with SET ROLE (SET LOCAL ROLE is checked against the session user: a superuser may enter
-- any role, anyone else must be a member, on PostgreSQL 16 and newer with the SET option).
select r from unnest(%s::text[]) as r
 where to_regrole(r) is not null
   and not (select rolsuper from pg_roles where rolname = session_user)
   and not case when current_setting('server_version_num')::int >= 160000
                then pg_has_role(session_user, r, 'SET')
                else pg_has_role(session_user, r, 'MEMBER') end
 order by 1

-- name: roles_owner_cannot_join -- before migration 0001 runs its roles step (0002_security.sql):
-- of the given roles, each one the current user can neither create (missing, and the user is no
-- superuser and lacks CREATEROLE) nor join (it exists, the user is no superuser and no member,
-- and may not grant it: ADMIN OPTION, or CREATEROLE before PostgreSQL 16), with which of the
-- two it is. The step would stop with a bare "must have admin option on role" for the second.
select r, to_regrole(r) is null as missing
  from unnest(%s::text[]) as r, pg_roles me
 where me.rolname = current_user
   and not me.rolsuper
   and case when to_regrole(r) is null then not me.rolcreaterole
            else not pg_has_role(current_user, r, 'MEMBER')
                 and not pg_has_role(current_user, r, 'MEMBER WITH ADMIN OPTION')
                 and not (me.rolcreaterole
                          and current_setting('server_version_num')::int < 160000) end
 order by r

-- name: roles_owner_may_grant_itself_set -- after migrate, on PostgreSQL 16 and newer: of the given
-- roles, those the current user (no superuser) may not enter with SET ROLE although it holds
-- ADMIN OPTION on them. A CREATEROLE user that created them got exactly that (ADMIN, no SET,
-- no INHERIT, unless createrole_self_grant says otherwise), which the roles step of 0001 took
-- for a membership: it grants itself the membership migrate means.
select r from unnest(%s::text[]) as r, pg_roles me
 where me.rolname = current_user
   and not me.rolsuper
   and current_setting('server_version_num')::int >= 160000
   and to_regrole(r) is not null
   and not pg_has_role(current_user, r, 'SET')
   and pg_has_role(current_user, r, 'MEMBER WITH ADMIN OPTION')
 order by r
